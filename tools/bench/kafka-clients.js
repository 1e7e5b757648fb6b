// Produce cost of kafkajs against the maintained clients docs/kafka-client.md weighs, in one
// process and one run: acks from all in-sync replicas, idempotent producers, one record of 20
// events (about 6 KB) per send and 32 sends in flight, as ingestion's outbox sends; alternating
// rounds per client. Prints records/s and process CPU (all threads) per record, and the ratios.
// The other clients are not dependencies of this repository (see docs/kafka-client.md for why and
// how they were installed): point CLIENTS_DIR at a folder whose node_modules holds
// @platformatic/kafka and/or @confluentinc/kafka-javascript; a missing one is left out.
//   CLIENTS_DIR=/tmp/clients node tools/bench/kafka-clients.js [records=10000] [rounds=3]
const path = require('node:path');

const root = path.join(__dirname, '../..');
const { Kafka, Partitioners, logLevel } = require(
  require.resolve('kafkajs', { paths: [path.join(root, 'libs/kafka')] }),
);
const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');
const records = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 3);
const IN_FLIGHT = 32;
const topic = `client-bench-${Date.now()}`;
const value = Buffer.from(
  JSON.stringify({
    batch: Array.from({ length: 20 }, (_, i) => ({
      type: 'track',
      event: `Bench ${i}`,
      messageId: 'm'.repeat(36),
      properties: { a: 'x'.repeat(200) },
    })),
  }),
);

function optional(name) {
  if (!process.env.CLIENTS_DIR) return undefined;
  try {
    return require(require.resolve(name, { paths: [process.env.CLIENTS_DIR] }));
  } catch {
    return undefined;
  }
}

async function pump(send) {
  let next = 0;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < records) await send(String(next++));
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return { rate: records / seconds, cpuMicros: (used.user + used.system) / records };
}

const clients = {
  kafkajs: async () => {
    const producer = new Kafka({ clientId: 'bench-kafkajs', brokers, logLevel: logLevel.NOTHING }).producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      idempotent: true,
    });
    await producer.connect();
    const result = await pump((key) => producer.send({ topic, acks: -1, messages: [{ key, value }] }));
    await producer.disconnect();
    return result;
  },
};
const platformatic = optional('@platformatic/kafka');
if (platformatic) {
  clients.platformatic = async () => {
    const producer = new platformatic.Producer({
      clientId: 'bench-platformatic',
      bootstrapBrokers: brokers,
      acks: -1,
      idempotent: true,
      autocreateTopics: false,
    });
    const result = await pump((key) =>
      producer.send({ messages: [{ topic, key: Buffer.from(key), value }] }),
    );
    await producer.close();
    return result;
  };
}
const confluent = optional('@confluentinc/kafka-javascript');
if (confluent) {
  clients.confluent = async () => {
    const kafka = new confluent.KafkaJS.Kafka({
      kafkaJS: { clientId: 'bench-confluent', brokers, logLevel: 0 },
    });
    const producer = kafka.producer({ kafkaJS: { acks: -1, idempotent: true } });
    await producer.connect();
    const result = await pump((key) => producer.send({ topic, messages: [{ key, value }] }));
    await producer.disconnect();
    return result;
  };
}

(async () => {
  const admin = new Kafka({ clientId: 'bench-admin', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: 12, replicationFactor: 1 }],
    waitForLeaders: true,
  });
  await admin.disconnect();
  const results = Object.fromEntries(Object.keys(clients).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(clients)) results[name].push(await run());
  }
  const mean = (list, pick) => list.reduce((sum, r) => sum + pick(r), 0) / list.length;
  console.log(
    `Node ${process.version}, ${records} records per round, ${rounds} rounds, brokers ${brokers.join(',')}`,
  );
  for (const [name, list] of Object.entries(results)) {
    const runs = list.map((r) => `${r.rate.toFixed(0)}/s ${r.cpuMicros.toFixed(0)} µs`).join('   ');
    console.log(`${name.padEnd(13)} ${runs}`);
  }
  for (const name of Object.keys(results).filter((n) => n !== 'kafkajs')) {
    const rate = mean(results[name], (r) => r.rate) / mean(results.kafkajs, (r) => r.rate);
    const cpu = mean(results[name], (r) => r.cpuMicros) / mean(results.kafkajs, (r) => r.cpuMicros);
    console.log(`${name} / kafkajs: ${rate.toFixed(2)}× records/s, ${cpu.toFixed(2)}× CPU per record`);
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
