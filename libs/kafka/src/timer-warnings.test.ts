import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '@pipeline/config';
import { kafkaConfigSchema } from './index';

// kafkajs 2.2.4 scheduled its request queue's check with a delay of about -Date.now() when it
// was not throttled; Node 24 warns about it (TimeoutNegativeWarning) once per client. The fix is
// patches/kafkajs@2.2.4.patch. Warnings go to stderr of a process of its own, so each case runs
// in a child process with the same Node as this test.
const config = loadConfig(kafkaConfigSchema, process.env);
const kafkajs = require.resolve('kafkajs');

interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runChild(source: string, timeoutMs: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', source], {
      env: { ...process.env, KAFKAJS_NO_PARTITIONER_WARNING: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child did not finish within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

// The child lists every process warning by name on stdout, so nothing depends on how Node
// formats them on stderr.
const recordWarnings = `
const warnings = [];
process.on('warning', (w) => warnings.push(w.name));
process.on('exit', () => console.log('WARNINGS ' + JSON.stringify(warnings)));
`;
const warningsOf = (stdout: string): string[] =>
  JSON.parse(/^WARNINGS (.*)$/m.exec(stdout)?.[1] ?? 'null') as string[];

describe('kafkajs timers on this Node', () => {
  it('runs on a Node that reports negative timer delays (the check below can fail)', async () => {
    const result = await runChild(`${recordWarnings} setTimeout(() => {}, -5);`, 10_000);
    expect(result.code).toBe(0);
    expect(warningsOf(result.stdout)).toEqual(['TimeoutNegativeWarning']);
  });

  it('sends and receives a message through the real broker without a TimeoutNegativeWarning', async () => {
    const topic = `test.timers.${randomUUID()}`;
    const value = randomUUID();
    const source = `${recordWarnings}
const { Kafka, logLevel } = require(${JSON.stringify(kafkajs)});
const kafka = new Kafka({ clientId: 'timer-warnings-test', brokers: ${JSON.stringify(config.KAFKA_BROKERS)}, logLevel: logLevel.NOTHING });
(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: ${JSON.stringify(topic)}, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  await producer.send({ topic: ${JSON.stringify(topic)}, messages: [{ value: ${JSON.stringify(value)} }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: ${JSON.stringify(`timers-${randomUUID()}`)} });
  await consumer.connect();
  await consumer.subscribe({ topic: ${JSON.stringify(topic)}, fromBeginning: true });
  const received = await new Promise((resolve) => {
    consumer.run({ eachMessage: async ({ message }) => resolve(message.value.toString()) });
  });
  await consumer.disconnect();
  console.log('RECEIVED ' + received);
})().catch((error) => { console.error(error); process.exit(1); });
`;
    const result = await runChild(source, 60_000);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.stdout).toContain(`RECEIVED ${value}`);
    expect(warningsOf(result.stdout)).toEqual([]);
  });
});
