import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { WarehouseWriter } from '@pipeline/destinations';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { createRedis, debuggerKeys, DebugStreamWriter } from '@pipeline/redis';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import { DebugRecorder } from '../debugger/debug-recorder';
import { event, staticApp } from '../testing/ingestion-harness';

const WRITE_KEY = 'static-write-key-1';

describe('static mode (WRITE_KEY, real PostgreSQL warehouse)', () => {
  let db: ScratchDatabase;
  let writer: WarehouseWriter;
  let client: Client;
  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'static warehouse');
    writer = new WarehouseWriter(db.url);
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await writer.close();
    await db.drop();
  });

  it('writes straight to the warehouse and answers 200 with inserted per destination', async () => {
    const app = staticApp(writer, { writeKey: WRITE_KEY });
    const batch = [
      event(),
      event({ type: 'identify', userId: 'u1', traits: { plan: 'pro' } }),
      { type: 'track' },
    ];
    const response = await request(app).post('/collect').set('X-Write-Key', WRITE_KEY).send({ batch });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ok: true,
      received: 3,
      invalid: 1,
      errors: [{ index: 2, errors: expect.any(Array) }],
      inserted: { warehouse: { rows: 2, duplicates: 0 } },
    });
    const events = await client.query('SELECT message_id FROM tracking.events');
    expect(events.rows.map((r) => r.message_id)).toEqual([batch[0]!.messageId]);
    expect((await client.query('SELECT traits FROM tracking.users')).rows).toEqual([
      { traits: { plan: 'pro' } },
    ]);
    const again = await request(app).post('/collect').set('X-Write-Key', WRITE_KEY).send({ batch });
    expect(again.body.inserted).toEqual({ warehouse: { rows: 0, duplicates: 2 } });
  });

  it('stores what the door accepts exactly as documented: NUL and unpaired surrogates as U+FFFD, a leap second as the next day', async () => {
    const app = staticApp(writer, { writeKey: WRITE_KEY });
    // Written as JSON text: the escapes are what a client's serializer sends.
    const body = `{"batch":[
      {"type":"track","event":"sign\\u0000up","messageId":"nul-1","anonymousId":"a\\ud800","timestamp":"2016-12-31T23:59:60Z","properties":{"k\\u0000":"v\\udc00"}},
      {"type":"track","event":"bad date","messageId":"bad-1","anonymousId":"a","timestamp":"2024-02-30T10:00:00Z"}
    ]}`;
    const response = await request(app)
      .post('/collect')
      .set('X-Write-Key', WRITE_KEY)
      .set('Content-Type', 'application/json')
      .send(body);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ok: true,
      received: 2,
      invalid: 1,
      errors: [
        {
          index: 1,
          errors: [
            {
              message:
                'timestamp must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z), on a date that exists, in the years 0001-9999',
            },
          ],
        },
      ],
      inserted: { warehouse: { rows: 1, duplicates: 0 } },
    });
    const { rows } = await client.query(
      "SELECT event, anonymous_id, timestamp, properties FROM tracking.events WHERE message_id = 'nul-1'",
    );
    expect(rows).toEqual([
      {
        event: 'sign\uFFFDup',
        anonymous_id: 'a\uFFFD',
        timestamp: new Date('2017-01-01T00:00:00.000Z'),
        properties: { 'k\uFFFD': 'v\uFFFD' },
      },
    ]);
  });

  it('refuses an impossible batch sentAt as invalid_batch', async () => {
    const app = staticApp(writer, { writeKey: WRITE_KEY });
    const response = await request(app)
      .post('/collect')
      .set('X-Write-Key', WRITE_KEY)
      .send({ sentAt: '2024-13-01T99:00:00Z', batch: [event()] });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid_batch');
    expect(JSON.stringify(response.body)).toContain(
      'sentAt must be an ISO 8601 date-time with a time zone, on a date that exists, in the years 0001-9999',
    );
  });

  it('applies no rate limits, and refuses a wrong key', async () => {
    const app = staticApp(writer, { writeKey: WRITE_KEY });
    for (let i = 0; i < 12; i += 1) {
      expect(
        (
          await request(app)
            .post('/collect')
            .set('X-Write-Key', WRITE_KEY)
            .send({ batch: Array.from({ length: 100 }, () => event()) })
        ).status,
      ).toBe(200);
    }
    expect((await request(app).post('/collect').set('X-Write-Key', 'wrong').send(event())).body).toEqual({
      ok: false,
      error: 'invalid_write_key',
    });
    expect((await request(app).get('/health')).body).toEqual({ ok: true, durableIngest: false });
  });

  it('answers 503 delivery_unavailable no_destination_ready when the warehouse cannot be reached', async () => {
    const unreachable = new WarehouseWriter('postgres://postgres@127.0.0.1:1/warehouse');
    const response = await request(staticApp(unreachable, { writeKey: WRITE_KEY }))
      .post('/collect')
      .set('X-Write-Key', WRITE_KEY)
      .send(event());
    expect(response.status).toBe(503);
    expect(response.body).toEqual({
      ok: false,
      error: 'delivery_unavailable',
      reason: 'no_destination_ready',
      retryAfter: 5,
    });
    expect(response.headers['retry-after']).toBe('5');
    await unreachable.close();
  });

  it('answers 503 delivery_unavailable destination_incomplete when a write fails part-way', async () => {
    const app = staticApp(writer, { writeKey: WRITE_KEY });
    await request(app).post('/collect').set('X-Write-Key', WRITE_KEY).send(event());
    await client.query('ALTER TABLE tracking.events RENAME COLUMN properties TO props');
    try {
      const response = await request(app).post('/collect').set('X-Write-Key', WRITE_KEY).send(event());
      expect(response.status).toBe(503);
      expect(response.body).toMatchObject({
        error: 'delivery_unavailable',
        reason: 'destination_incomplete',
      });
    } finally {
      await client.query('ALTER TABLE tracking.events RENAME COLUMN props TO properties');
    }
  });

  it('records for the debugger under the write key id `static`, and answers 200 as usual with its Redis down', async () => {
    const logger = createLogger({ service: 'static-debugger-test', stream: new PassThrough() });
    const options = { maxLen: 500, ttlSeconds: 60, maxPerSecond: 50 };
    // The static key id is the same in every run: a prefix of its own keeps this run's stream apart.
    const up = createRedis(
      { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
      { logger, keyPrefix: `test:${randomUUID()}:` },
    );
    const down = createRedis({ REDIS_URL: 'redis://127.0.0.1:1' }, { logger });
    await up.connect();
    await down.connect().catch(() => undefined);
    const key = debuggerKeys.events('static');
    await up.del(key);
    try {
      const upWriter = new DebugStreamWriter(up, options, logger);
      const recorded = event({ event: 'Static debug' });
      const app = staticApp(writer, { writeKey: WRITE_KEY, recorder: new DebugRecorder(upWriter) });
      expect((await request(app).post('/collect').set('X-Write-Key', WRITE_KEY).send(recorded)).status).toBe(
        200,
      );
      await waitUntil('the entry in the stream', async () => (await up.xlen(key)) >= 1);
      const [[, fields]] = (await up.xrange(key, '-', '+')) as [string, string[]][];
      expect(JSON.parse(fields[1])).toMatchObject({
        status: 'accepted',
        messageId: recorded.messageId,
        payload: recorded,
      });

      const downWriter = new DebugStreamWriter(down, options, logger);
      const unaffected = staticApp(writer, { writeKey: WRITE_KEY, recorder: new DebugRecorder(downWriter) });
      const response = await request(unaffected).post('/collect').set('X-Write-Key', WRITE_KEY).send(event());
      expect(response.status).toBe(200);
      expect(response.body.inserted).toEqual({ warehouse: { rows: 1, duplicates: 0 } });
      // Counted as lost by the time of the answer: the request never waited on the down Redis.
      expect(downWriter.stats).toEqual({ recorded: 0, sampledOut: 0, failed: 1 });
    } finally {
      await up.del(key);
      up.disconnect();
      down.disconnect();
    }
  });
});
