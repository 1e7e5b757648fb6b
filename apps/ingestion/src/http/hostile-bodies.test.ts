import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { Client } from 'pg';
import { MAX_ENVELOPE_BYTES } from '@pipeline/events';
import { hostileBodies, type HostileBody } from '@pipeline/events/testing';
import { readTopicSnapshot } from '@pipeline/kafka';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { event, startHosted, type Hosted } from '../testing/ingestion-harness';
import { SEGMENT_MAX_MESSAGES } from '../segment/segment-request';

// A 478 KB body of a 20,000-key batch context and 93,000 empty messages,
// sent with no key, took the process down (V8 out of heap). Every body of hostileBodies() at
// every route that reads a body is answered with its documented 4xx, and a good event is
// accepted right after.

const segmentRoutes = ['batch', 'b', 'import', 'track', 't', 'identify', 'i', 'page', 'p', 'screen', 's']
  .concat(['group', 'g', 'alias', 'a'])
  .map((name) => `/v1/${name}`);
const batchRoutes = new Set(['/v1/batch', '/v1/b', '/v1/import']);
const bodies = hostileBodies();

type Key = 'none' | 'unknown' | 'valid';

/** The documented answer of each hostile body at each route, by the key it is sent with. */
function expected(route: string, hostile: HostileBody, key: Key): [number, string] {
  // A key in a header is checked before the body is parsed (security review 2026-11-29,
  // finding 7): an unknown one is refused whatever the body.
  if (key === 'unknown') return [401, 'invalid_write_key'];
  const refusedKey: [number, string] = key === 'none' ? [401, 'missing_write_key'] : [400, ''];
  // Without a key in a header, what the parser refuses is refused before the key is looked at.
  if (route === '/collect') {
    if (
      hostile.name === 'context amplification' ||
      hostile.name === 'merge amplification under the message cap'
    )
      return [413, 'batch_too_large'];
  } else if (batchRoutes.has(route)) {
    if (hostile.name === 'context amplification') return [413, 'batch_too_large'];
    if (hostile.name === 'merge amplification under the message cap') return [413, 'payload_too_large'];
    if (hostile.name === 'deep batch context') return [400, 'invalid_batch'];
  }
  // A known key gets its events validated: none of these is a valid event (too deep, over
  // 32 KB, or not an event at all).
  return key === 'valid' ? [400, 'no_valid_events'] : refusedKey;
}

describe('hostile bodies, hosted mode: every route answers with its documented 4xx', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('hostile bodies', { backstopEps: 1_000_000, authAttemptsPerMinute: 100_000 });
  });
  afterAll(() => h.close());

  const keyOf = (key: Key) =>
    key === 'valid' ? h.openWriteKey : key === 'unknown' ? 'wk_unknown_hostile' : null;

  it.each(['none', 'unknown', 'valid'] as const)('with %s key', async (key) => {
    const answers: string[] = [];
    const wanted: string[] = [];
    for (const route of ['/collect', ...segmentRoutes]) {
      for (const hostile of bodies) {
        const post = request(h.app).post(route).set('Content-Type', 'application/json');
        const writeKey = keyOf(key);
        if (writeKey) post.set('X-Write-Key', writeKey);
        const response = await post.send(hostile.json);
        const code = (route === '/collect' ? response.body.error : response.body.code) as string;
        answers.push(`${route} ${hostile.name}: ${response.status} ${code}`);
        const [status, wantedCode] = expected(route, hostile, key);
        wanted.push(`${route} ${hostile.name}: ${status} ${wantedCode || 'no_valid_events'}`);
      }
    }
    expect(answers).toEqual(wanted);
    // And the service still takes a good event on both APIs.
    const good = event({ messageId: `hostile-after-${key}` });
    const collected = await request(h.app).post('/collect').set('X-Write-Key', h.openWriteKey).send(good);
    expect([collected.status, collected.body.accepted]).toEqual([202, true]);
    const tracked = await request(h.app)
      .post('/v1/track')
      .set('X-Write-Key', h.openWriteKey)
      .send({ userId: 'after', event: 'After', messageId: `hostile-segment-after-${key}` });
    expect([tracked.status, tracked.body]).toEqual([200, { success: true }]);
  });

  it(`takes a batch of exactly ${SEGMENT_MAX_MESSAGES} messages and refuses one more`, async () => {
    const batch = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({
        type: 'track',
        userId: 'cap',
        event: 'Cap',
        messageId: `${tag}-${i}`,
      }));
    const over = await request(h.app)
      .post('/v1/batch')
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: batch(SEGMENT_MAX_MESSAGES + 1, 'cap-over') });
    expect([over.status, over.body.code, over.body.details]).toEqual([
      413,
      'batch_too_large',
      [
        {
          message: `received ${SEGMENT_MAX_MESSAGES + 1} events; at most ${SEGMENT_MAX_MESSAGES} are accepted`,
        },
      ],
    ]);
    const at = await request(h.app)
      .post('/v1/batch')
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: batch(SEGMENT_MAX_MESSAGES, 'cap-at') });
    expect([at.status, at.body]).toEqual([200, { success: true }]);
    const committed = (await h.readTopic()).filter((c) => c.event.messageId.startsWith('cap-'));
    expect(committed.map((c) => c.event.messageId).sort()).toEqual(
      batch(SEGMENT_MAX_MESSAGES, 'cap-at')
        .map((m) => m.messageId)
        .sort(),
    );
  });

  it('splits a batch whose merged context makes it larger than its body into records of at most 512 KB', async () => {
    // 60 messages of a 12 KB batch context: a 13 KB body whose events weigh 720 KB merged.
    const shared = { note: 'n'.repeat(12 * 1024) };
    const messages = Array.from({ length: 60 }, (_, i) => ({
      type: 'track',
      userId: 'merged',
      event: 'Merged',
      messageId: `merged-split-${i}`,
    }));
    const response = await request(h.app)
      .post('/v1/batch')
      .set('X-Write-Key', h.openWriteKey)
      .send({ context: shared, batch: messages });
    expect([response.status, response.body]).toEqual([200, { success: true }]);
    const records = (await readTopicSnapshot(h.kafka, h.topic)).filter((r) =>
      r.value?.toString('utf8').includes('merged-split-'),
    );
    expect(records.length).toBeGreaterThan(1);
    for (const record of records) expect(record.value!.length).toBeLessThanOrEqual(MAX_ENVELOPE_BYTES);
    const committed = (await h.readTopic()).filter((c) => c.event.messageId.startsWith('merged-split-'));
    expect(committed.length).toBe(60);
    for (const c of committed) expect(c.event.context).toEqual(shared);
  });
});

// The built service, as operators run it, with a stated heap: a body that needs more than a
// small multiple of its size aborts the process instead of answering.
const HEAP_LIMIT_MB = 128;
const dist = path.join(__dirname, '../../dist/main.js');

describe(`hostile bodies at every public route of the built service (static mode, ${HEAP_LIMIT_MB} MB heap)`, () => {
  const writeKey = 'static-hostile-key';
  let child: ChildProcess;
  let base: string;
  let stderr = '';
  let warehouse: ScratchDatabase;
  let exited: number | null | undefined;

  beforeAll(async () => {
    if (!existsSync(dist)) throw new Error('build apps/ingestion first: pnpm exec nx build ingestion');
    warehouse = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'hostile static',
    );
    const port = 20000 + Math.floor(Math.random() * 10000);
    base = `http://127.0.0.1:${port}`;
    const { REDIS_URL: _redis, DATABASE_URL: _database, ...env } = process.env;
    child = spawn(process.execPath, [`--max-old-space-size=${HEAP_LIMIT_MB}`, dist], {
      env: {
        ...env,
        MANAGED_AUTH_ENABLED: 'false',
        WRITE_KEY: writeKey,
        WAREHOUSE_URL: warehouse.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(port + 1),
        DEMO_MODE: 'true',
        ADMIN_SETUP_ENABLED: 'true',
        ADMIN_SETUP_TOKEN: 'hostile-admin-token-1234',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
    child.once('exit', (code) => (exited = code));
    const deadline = Date.now() + 60_000;
    while (
      (
        await request(base)
          .get('/livez')
          .catch(() => null)
      )?.status !== 200
    ) {
      if (exited !== undefined || Date.now() > deadline)
        throw new Error(`ingestion did not start: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await warehouse?.drop();
  });

  const routes: [method: 'get' | 'post' | 'options', path: string][] = [
    ['post', '/collect'],
    ...segmentRoutes.map((route): ['post', string] => ['post', route]),
    ['post', '/admin/simulate'],
    ['get', '/v1/sdk.js'],
    ['get', '/v1/snippet'],
    ['get', `/v1/projects/${writeKey}/settings`],
    ['get', '/health'],
    ['get', '/livez'],
    ['get', '/readyz'],
    ['options', '/collect'],
    ['post', '/not-a-route'],
  ];

  it('answers every body at every route below 500 and stays up', async () => {
    const failures: string[] = [];
    for (const [method, route] of routes) {
      for (const hostile of bodies) {
        for (const key of [null, 'unknown-hostile-key', writeKey]) {
          const call = request(base)[method](route).set('Content-Type', 'application/json');
          if (key) call.set('X-Write-Key', key);
          if (route === '/admin/simulate') call.set('X-Admin-Token', 'hostile-admin-token-1234');
          const response = await call.send(hostile.json).catch((error: Error) => ({ status: error.message }));
          const pipeline = route === '/collect' || route.startsWith('/v1/') ? method === 'post' : false;
          const ok =
            typeof response.status === 'number' &&
            response.status < 500 &&
            (!pipeline || (response.status >= 400 && response.status < 500));
          if (!ok) failures.push(`${method} ${route} ${hostile.name} key=${key}: ${response.status}`);
          if (exited !== undefined) throw new Error(`ingestion exited (${exited}): ${stderr.slice(-2000)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    // A good event after all of them: accepted and in the warehouse.
    const good = await request(base)
      .post('/v1/track')
      .set('X-Write-Key', writeKey)
      .send({ userId: 'after-hostile', event: 'After', messageId: 'static-after-hostile' });
    expect([good.status, good.body.success]).toEqual([200, true]);
    const db = new Client({ connectionString: warehouse.url });
    await db.connect();
    try {
      const rows = await db.query(
        "SELECT user_id, event FROM tracking.events WHERE message_id = 'static-after-hostile'",
      );
      expect(rows.rows).toEqual([{ user_id: 'after-hostile', event: 'After' }]);
    } finally {
      await db.end();
    }
    expect(exited).toBeUndefined();
  });
});
