// First: tracing starts before node:http and the rest load, as in main.ts.
import { testTracing } from '../testing/test-tracing';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import {
  AmplitudeForwarder,
  ForwardingDestination,
  runConsumer,
  TenantDirectory,
  vendorClientOptions,
  createDestination,
  type RunningConsumer,
} from '@pipeline/destinations';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { ensureTopics } from '@pipeline/kafka';
import { SpanKind, type ReadableSpan } from '@pipeline/telemetry/testing';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { event, startHosted, type Hosted } from '../testing/ingestion-harness';

/** Waits until `done` holds, at most 20 s. */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const statementOf = (span: ReadableSpan) =>
  String(span.attributes['db.statement'] ?? span.attributes['db.query.text'] ?? '');
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

// One trace from POST /collect through the outbox record to each delivery consumer's handling:
// the warehouse insert and the vendor call. Real Kafka, PostgreSQL, Redis and control plane.
describe('one trace from POST /collect to the warehouse insert and the vendor call', () => {
  let h: Hosted;
  let ingestion: Server;
  let ingestionUrl: string;
  let db: ScratchDatabase;
  let client: Client;
  let amplitude: LookAlikeServer;
  const consumers: RunningConsumer[] = [];
  const consumerLogs: string[] = [];

  beforeAll(async () => {
    h = await startHosted('tracing', { backstopEps: 1_000_000 });
    ingestion = createServer(h.app);
    await new Promise<void>((resolve) => ingestion.listen(0, '127.0.0.1', resolve));
    ingestionUrl = `http://127.0.0.1:${(ingestion.address() as AddressInfo).port}`;
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'tracing');
    client = new Client({ connectionString: db.url });
    await client.connect();
    amplitude = await startLookAlikeVendor('amplitude');
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) =>
      consumerLogs.push(...chunk.toString('utf8').split('\n').filter(Boolean)),
    );
    const logger = createLogger({ service: 'delivery-test', stream, level: 'debug' });
    const topicsOf = (kind: string) => ({
      source: h.topic,
      retry: `${h.topic}.${kind}.retry`,
      deadLetter: `${h.topic}.${kind}.dead-letter`,
    });
    await ensureTopics(
      h.kafka,
      ['warehouse', 'amplitude']
        .flatMap((kind) => [topicsOf(kind).retry, topicsOf(kind).deadLetter])
        .map((topic) => ({ topic, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    // Each account's Amplitude destination, pointed at the look-alike.
    const tenants = new TenantDirectory(
      {
        lookup: (writeKeyId) =>
          Promise.resolve({
            accountId:
              writeKeyId === h.tenants.b.openWriteKeyId ? h.tenants.b.accountId : h.tenants.a.accountId,
            writeKeyId,
            status: 'active' as const,
            allowedOrigins: [],
            destinations: [lookAlikeDestination(amplitude)],
            warehouse: null,
          }),
      },
      { ttlMs: 60_000 },
      logger,
    );
    const run = randomUUID();
    consumers.push(
      await runConsumer({
        kafka: h.kafka,
        destination: createDestination('warehouse', { logger, warehouseUrl: db.url }),
        topics: topicsOf('warehouse'),
        groupId: `tracing-warehouse-${run}`,
        logger,
        maxWaitTimeInMs: 100,
      }),
      await runConsumer({
        kafka: h.kafka,
        destination: new ForwardingDestination(
          new AmplitudeForwarder(vendorClientOptions({ timeoutMs: 5000 }, amplitude.url)),
          tenants,
          logger,
        ),
        topics: topicsOf('amplitude'),
        groupId: `tracing-amplitude-${run}`,
        logger,
        maxWaitTimeInMs: 100,
      }),
    );
    await Promise.all(consumers.map((consumer) => consumer.joined));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(consumers.map((consumer) => consumer.stop()));
    await client?.end();
    await db?.drop();
    await amplitude?.close();
    ingestion?.closeAllConnections();
    await new Promise((resolve) => ingestion?.close(resolve));
    await h?.close();
    await testTracing.shutdown();
  });

  it('covers the HTTP server span, the Kafka send, each consumer’s process span, the INSERT and the vendor request', async () => {
    const userId = `traced-${randomUUID()}`;
    const response = await fetch(`${ingestionUrl}/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ writeKey: h.openWriteKey, batch: [event({ userId, event: 'Traced' })] }),
    });
    expect(response.status).toBe(202);

    // Another account's event after it: delivered to that account's schema only.
    const otherUserId = `traced-b-${randomUUID()}`;
    const other = await fetch(`${ingestionUrl}/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        writeKey: h.tenants.b.openWriteKey,
        batch: [event({ userId: otherUserId, event: 'Traced' })],
      }),
    });
    expect(other.status).toBe(202);

    const usersIn = async (accountId: string): Promise<string[]> => {
      try {
        const { rows } = await client.query<{ user_id: string }>(
          `SELECT user_id FROM ${warehouseSchemaFor(accountId)}.events ORDER BY user_id`,
        );
        return rows.map((row) => row.user_id);
      } catch (error) {
        if ((error as { code?: string }).code === '42P01') return []; // created with the first record
        throw error;
      }
    };
    await until(async () => (await usersIn(h.tenants.a.accountId)).length > 0, "A's row in the warehouse");
    await until(async () => (await usersIn(h.tenants.b.accountId)).length > 0, "B's row in the warehouse");
    expect(await usersIn(h.tenants.a.accountId)).toEqual([userId]);
    expect(await usersIn(h.tenants.b.accountId)).toEqual([otherUserId]);
    await until(
      () => [userId, otherUserId].every((id) => amplitude.accepted.some((a) => a.item.user_id === id)),
      'both events at Amplitude',
    );

    // The /collect request is the root: fetch from this test starts no span (no parent).
    const spans = () => testTracing.spans();
    const server = spans().find(
      (s) =>
        s.kind === SpanKind.SERVER &&
        String(s.attributes['http.target'] ?? s.attributes['url.path']).startsWith('/collect'),
    );
    expect(server).toMatchObject({
      name: 'POST /collect',
      attributes: expect.objectContaining({ 'http.route': '/collect' }),
    });
    const traceId = server!.spanContext().traceId;
    expect(parentOf(server!)).toBeUndefined();
    const inTrace = () => spans().filter((s) => s.spanContext().traceId === traceId);

    const send = inTrace().find((s) => s.kind === SpanKind.PRODUCER);
    expect(send).toMatchObject({
      name: `send ${h.topic}`,
      attributes: expect.objectContaining({
        'messaging.system': 'kafka',
        'messaging.destination.name': h.topic,
      }),
    });
    expect(parentOf(send!)).toBe(server!.spanContext().spanId);

    // Spans end after their children: wait for both process spans to be exported.
    const processOf = (kind: string) =>
      inTrace().find(
        (s) => s.kind === SpanKind.CONSUMER && s.attributes['pipeline.destination.kind'] === kind,
      );
    await until(() => !!processOf('warehouse') && !!processOf('amplitude'), 'the process spans');
    for (const kind of ['warehouse', 'amplitude']) {
      expect(processOf(kind)).toMatchObject({
        name: `process ${h.topic}`,
        attributes: expect.objectContaining({ 'messaging.operation.type': 'process' }),
      });
      expect(parentOf(processOf(kind)!)).toBe(send!.spanContext().spanId);
    }

    const insert = inTrace().find(
      // The events are COPYed into the account's table, in the one query that opens and commits
      // the transaction around it (an upsert from JSON only on redelivery).
      (s) => s.kind === SpanKind.CLIENT && /(?:^|; )COPY "?[a-z0-9_]+"?\."?events"? /i.test(statementOf(s)),
    );
    expect(insert).toBeDefined();
    expect(insert!.attributes['db.system'] ?? insert!.attributes['db.system.name']).toBe('postgresql');
    expect(parentOf(insert!)).toBe(processOf('warehouse')!.spanContext().spanId);

    const vendor = inTrace().find(
      (s) => s.kind === SpanKind.CLIENT && String(s.attributes['url.full']).startsWith(amplitude.url),
    );
    expect(vendor).toMatchObject({
      attributes: expect.objectContaining({
        'http.request.method': 'POST',
        'http.response.status_code': 200,
      }),
    });
    expect(parentOf(vendor!)).toBe(processOf('amplitude')!.spanContext().spanId);

    // Log lines written inside the request and inside the batch's handling carry the trace.
    const lines = (texts: string[]) =>
      texts
        .flatMap((text) => text.split('\n').filter(Boolean))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    const completed = lines(h.logs).find((l) => l.message === 'request completed' && l.path === '/collect');
    expect(completed).toMatchObject({ trace_id: traceId, span_id: server!.spanContext().spanId });
    const handled = lines(consumerLogs).filter(
      (l) => l.message === 'batch handled' && l.trace_id === traceId,
    );
    expect(handled.map((l) => l.span_id).sort()).toEqual(
      [processOf('warehouse')!, processOf('amplitude')!].map((s) => s.spanContext().spanId).sort(),
    );
  }, 60_000);
});
