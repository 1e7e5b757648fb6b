import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';

// Security review 2026-11-29, finding 4: every forwarding consumer mounted the platform
// warehouse's WAREHOUSE_URL. The manifests now mount it in the warehouse consumer alone, so the
// other kinds must come up without it: the built process, on real Kafka, with no WAREHOUSE_URL
// in its environment at all.
const dist = path.join(__dirname, '../dist');

describe('delivery kinds other than warehouse start without WAREHOUSE_URL (the process, real Kafka)', () => {
  const started: ChildProcess[] = [];
  beforeAll(() => {
    if (!existsSync(path.join(dist, 'main.js')))
      throw new Error('build apps/delivery first: pnpm exec nx build delivery');
  });
  afterAll(() => {
    for (const child of started)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it.each(['webhook', 'log'])(
    '--destination %s joins its group and answers /readyz',
    async (kind) => {
      // Below Linux's ephemeral range (32768+), so no outgoing connection holds it.
      const httpPort = 20000 + Math.floor(Math.random() * 10000);
      const { WAREHOUSE_URL: _dropped, ...inherited } = process.env;
      const env: NodeJS.ProcessEnv = {
        ...inherited,
        KAFKA_TOPIC_PREFIX: `test-${randomUUID().slice(0, 8)}.`,
        DELIVERY_HTTP_PORT: String(httpPort),
        DELIVERY_HTTP_HOST: '127.0.0.1',
        // A forwarding kind's lookups: never made here, as no record is sent.
        CONTROL_PLANE_URL: 'http://127.0.0.1:9',
        INTERNAL_SERVICE_TOKEN: 'forwarding-start-test-token-0123456789',
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
      };
      expect('WAREHOUSE_URL' in env).toBe(false);
      const child = spawn(process.execPath, [path.join(dist, 'main.js'), '--destination', kind], {
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      started.push(child);
      let stderr = '';
      child.stderr?.on(
        'data',
        (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)),
      );
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

      // Bounded: a loaded machine joins a new group slowly; an exit ends the wait at once.
      const deadline = Date.now() + 60_000;
      let ready: { status: number; body: unknown } | null = null;
      while (!ready && Date.now() < deadline && child.exitCode === null) {
        ready = await fetch(`http://127.0.0.1:${httpPort}/readyz`)
          .then(async (answer) =>
            answer.status === 200 ? { status: answer.status, body: await answer.json() } : null,
          )
          .catch(() => null);
        if (!ready) await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect({ kind, exitCode: child.exitCode, ready, stderr: stderr.slice(-2000) }).toEqual({
        kind,
        exitCode: null,
        ready: { status: 200, body: { ok: true, checks: { consumer: 'up' } } },
        stderr: expect.any(String),
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    },
    120_000,
  );
});
