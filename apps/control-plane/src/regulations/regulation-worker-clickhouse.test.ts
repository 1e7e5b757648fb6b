import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Admin } from 'kafkajs';
import { deletionClientFor } from '@pipeline/catalog';
import { loadConfig } from '@pipeline/config';
import {
  consumerGroupFor,
  defaultWarehouseTimeouts,
  deliveryTopicsFor,
  retryGroupFor,
  WarehouseEngines,
} from '@pipeline/destinations';
import {
  clickhouseConnectionOf,
  startClickHouseWarehouse,
  type ClickHouseWarehouse,
} from '@pipeline/destinations/testing';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createKafka, ensureTopics, kafkaConfigSchema, pipelineTopics, prefixedTopic } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { CredentialCipher } from '../apps/credential-cipher';
import { eraseFromDeadLetters } from '../dead-letters/dead-letter-erasure';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import { OneWarehouse } from '../warehouse-access/account-warehouses';
import { RegulationFence } from './regulation-fence';
import { resolvedIntegration } from './regulation-vendors';
import { RegulationWorker, defaultRegulationWorkerOptions } from './regulation-worker';

// The regulation worker end to end on an account whose warehouse is ClickHouse (chdb's engine
// behind its HTTP interface): the dry run counts, the fence holds the erasure, the erasure goes
// in steps, the purge leaves no stored copy of the subject's rows (ClickHouse keeps replaced
// versions of users and groups until merged), and a DELETE_ONLY keeps what came after its
// cut-off. The engine's own erasure is tested in libs/destinations (subject-erasure.test.ts).

const logs: string[] = [];
const stream = new PassThrough();
stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
const logger = createLogger({ service: 'regulation-worker-clickhouse-test', stream, level: 'debug' });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'regulation-worker-clickhouse-test',
  logger,
});

interface Regulation {
  id: string;
  overallStatus: string;
  cutoff: string | null;
  targets: { target: string; kind: string; status: string; appType: string | null }[];
}

const receipt = { ip: null, userAgent: null };
function row(event: Record<string, unknown>, receivedAt: Date): WarehouseRow {
  const result = validateEvent({
    messageId: randomUUID(),
    anonymousId: 'anon-bystander',
    timestamp: receivedAt.toISOString(),
    ...event,
  });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { ...receipt, receivedAt });
}

describe('regulation worker on a ClickHouse warehouse (real ClickHouse engine, PostgreSQL and Kafka)', () => {
  const prefix = `test.${randomUUID()}.`;
  let ch: ClickHouseWarehouse;
  let engines: WarehouseEngines;
  let h: Harness;
  let admin: Admin;
  let fence: RegulationFence;
  let worker: RegulationWorker;
  const cipher = new CredentialCipher(TEST_CREDENTIAL_KEYS);

  beforeAll(async () => {
    ch = await startClickHouseWarehouse();
    engines = WarehouseEngines.open(
      { processMaxConnections: 10, idleMs: 10_000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    const warehouses = new OneWarehouse(engines, clickhouseConnectionOf(ch.server, 'regulation-ch'));
    h = await startHarness('regulation worker clickhouse', { warehouse: warehouses, warehouseUrl: ch.url });
    await ensureTopics(
      kafka,
      [prefixedTopic(pipelineTopics.trackingEvents, prefix), deliveryTopicsFor('warehouse', prefix).retry],
      { replicationFactor: 1, logger },
    );
    admin = kafka.admin();
    await admin.connect();
    fence = new RegulationFence(kafka, prefix);
    worker = new RegulationWorker(
      {
        dataSource: h.db.dataSource,
        service: h.services.regulations.service,
        cipher,
        warehouses,
        fence,
        eraseDeadLetters: (accountId, regulation, options) =>
          eraseFromDeadLetters(h.db.dataSource, accountId, regulation, options),
        // No debugger's Redis in this suite: nothing is kept there.
        eraseDebugger: null,
        vendorClient: (appType) => deletionClientFor(appType, {}),
        resolveIntegration: (id) => resolvedIntegration(h.db.dataSource, cipher, id),
        logger,
      },
      { ...defaultRegulationWorkerOptions, fenceDelayMs: 0, retryBaseMs: 50, warehouseRowsPerStep: 2 },
    );
  }, 120_000);

  afterAll(async () => {
    await fence?.close();
    await admin?.disconnect();
    await h?.close();
    await engines?.close();
    await ch?.destroy();
  }, 60_000);

  /** The warehouse kind's groups commit up to the topics' ends: a consumer that passed everything. */
  const warehouseCaughtUp = async () => {
    const group = consumerGroupFor('warehouse', prefix);
    for (const [topic, groupId] of [
      [prefixedTopic(pipelineTopics.trackingEvents, prefix).topic, group],
      [deliveryTopicsFor('warehouse', prefix).retry.topic, retryGroupFor(group)],
    ] as const) {
      const ends = await admin.fetchTopicOffsets(topic);
      await admin.setOffsets({
        groupId,
        topic,
        partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })),
      });
    }
  };
  const regulation = async (t: Tenant, id: string) =>
    (await h.as(t.key).get(`/api/v1/regulations/${id}`).expect(200)).body.data.regulation as Regulation;
  const warehouseStatus = (r: Regulation) => r.targets.find((target) => target.kind === 'warehouse')?.status;
  const untilFinished = async (t: Tenant, id: string) => {
    let current = await regulation(t, id);
    await waitUntil(`the regulation to finish (${JSON.stringify(current.targets)})`, async () => {
      await worker.cycle();
      current = await regulation(t, id);
      return current.overallStatus !== 'RUNNING';
    });
    return current;
  };
  const seed = async (accountId: string, rows: WarehouseRow[]) => {
    const account = { accountId, schema: warehouseSchemaFor(accountId) };
    await ch.engine.ensureAccount(account);
    await ch.engine.writeRows(account, rows);
  };
  /** The message ids of an account's table, by key (one per key, as a reader sees it). */
  const ids = async (accountId: string, table: 'events' | 'users' | 'aliases', column: string) =>
    (await ch.tableRows(warehouseSchemaFor(accountId), table))
      .map((r) => `${String(r[column])}/${String(r.message_id)}`)
      .sort();

  it('SUPPRESS_WITH_DELETE: counts, waits for the fence, erases in steps and purges every stored copy', async () => {
    const t = await h.tenant();
    const other = await h.tenant();
    const x = `user-${randomUUID()}`;
    const y = `user-${randomUUID()}`;
    const at = new Date(Date.now() - 60_000);
    const later = new Date(at.getTime() + 1000);
    await seed(t.accountId, [
      row({ type: 'track', event: 'Bought', userId: x, anonymousId: 'anon-x', messageId: 'x-1' }, at),
      row({ type: 'track', event: 'Viewed', userId: x, anonymousId: 'anon-x', messageId: 'x-2' }, at),
      row({ type: 'page', name: 'Home', userId: x, anonymousId: 'anon-x', messageId: 'x-3' }, at),
      // Two versions of x's user row: the stored table keeps both until ClickHouse merges them.
      row({ type: 'identify', userId: x, traits: { email: 'x@example.com' }, messageId: 'xu-1' }, at),
      row({ type: 'identify', userId: x, traits: { plan: 'pro' }, messageId: 'xu-2' }, later),
      row({ type: 'alias', userId: 'x-later', previousId: x, messageId: 'xa-1' }, at),
      row({ type: 'track', event: 'Bought', userId: y, anonymousId: 'anon-y', messageId: 'y-1' }, at),
      row({ type: 'identify', userId: y, traits: { email: 'y@example.com' }, messageId: 'yu-1' }, at),
    ]);
    // The same user id in another account is another person.
    await seed(other.accountId, [row({ type: 'track', event: 'Bought', userId: x, messageId: 'o-1' }, at)]);
    expect(await ch.count(warehouseSchemaFor(t.accountId), 'users', false)).toBe(3);

    const dryRun = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'SUPPRESS_WITH_DELETE', subjectType: 'USER_ID', subjectIds: [x], dryRun: true })
      .expect(200);
    // What the erasure removes: x's user row is stored twice (docs/privacy.md, dry run).
    expect(dryRun.body.data.warehouses).toEqual([
      expect.objectContaining({ rows: { events: 3, users: 2, groups: 0, aliases: 1 } }),
    ]);

    const created = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'SUPPRESS_WITH_DELETE', subjectType: 'USER_ID', subjectIds: [x] })
      .expect(200);
    const id = created.body.data.regulateId as string;
    // Something in flight for the warehouse consumer: the erasure waits for it to pass.
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: prefixedTopic(pipelineTopics.trackingEvents, prefix).topic,
      messages: [{ key: `${t.accountId}:`, value: 'in flight' }],
    });
    await producer.disconnect();
    for (let i = 0; i < 3; i += 1) await worker.cycle();
    expect(warehouseStatus(await regulation(t, id))).toBe('waiting_fence');
    expect(await ids(t.accountId, 'events', 'user_id')).toHaveLength(4);

    await warehouseCaughtUp();
    const done = await untilFinished(t, id);
    expect([done.overallStatus, warehouseStatus(done)]).toEqual(['FINISHED', 'done']);
    expect(await ids(t.accountId, 'events', 'user_id')).toEqual([`${y}/y-1`]);
    expect(await ids(t.accountId, 'users', 'user_id')).toEqual([`${y}/yu-1`]);
    expect(await ids(t.accountId, 'aliases', 'previous_id')).toEqual([]);
    // No stored copy is left behind for a merge to bring back: y's user row only.
    expect(await ch.count(warehouseSchemaFor(t.accountId), 'users', false)).toBe(1);
    expect(await ids(other.accountId, 'events', 'user_id')).toEqual([`${x}/o-1`]);
    expect(logs.join('')).not.toContain(x);
  }, 180_000);

  it('DELETE_ONLY by anonymous id keeps what was received after the cut-off', async () => {
    const t = await h.tenant();
    const anon = `anon-${randomUUID()}`;
    await seed(t.accountId, [
      row(
        { type: 'track', event: 'Before', anonymousId: anon, messageId: 'b-1' },
        new Date(Date.now() - 60_000),
      ),
    ]);
    const created = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'DELETE_ONLY', subjectType: 'ANONYMOUS_ID', subjectIds: [anon] })
      .expect(200);
    const cutoff = Date.parse(created.body.data.regulation.cutoff as string);
    await seed(t.accountId, [
      row({ type: 'track', event: 'After', anonymousId: anon, messageId: 'a-1' }, new Date(cutoff + 1000)),
    ]);
    await warehouseCaughtUp();
    const done = await untilFinished(t, created.body.data.regulateId as string);
    expect([done.overallStatus, warehouseStatus(done)]).toEqual(['FINISHED', 'done']);
    expect(await ids(t.accountId, 'events', 'anonymous_id')).toEqual([`${anon}/a-1`]);
  }, 180_000);
});
