import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { parseOutboxEnvelope, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
import { createIsolatedVmRuntime, derivedMessageId, type FunctionRuntime } from '@pipeline/functions';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor, type BoundFunction, type TenantRecord } from '@pipeline/tenancy';
import type { DeliveryMessage, FailedDelivery } from '../destination';
import { createDestination } from '../destination-kinds';
import { vendorClientOptions } from '../forwarding/forwarder';
import { ForwardingDestination } from '../forwarding/forwarding-destination';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../forwarding/testing/vendor-server';
import { AmplitudeForwarder } from '../forwarding/vendors/amplitude/amplitude-forwarder';
import { WebhookForwarder } from '../forwarding/vendors/webhook/webhook-forwarder';
import type { DeliveryOutcomeEntry, OutcomeRecorder } from '../outcome-recorder';
import { TenantDirectory } from '../tenant-directory';
import { StaticWarehouseDirectory, warehouseConnectionFromUrl } from '../warehouse/warehouse-directory';
import { FunctionStep } from './function-step';

// Destination functions in the consumers (docs/functions.md): the real isolated-vm sandbox, the
// real warehouse (PostgreSQL) and vendor look-alikes; each outcome is asserted in what arrived.
const logger = createLogger({ service: 'function-delivery-test', stream: new PassThrough() });

let versions = 0;
const bound = (code: string): BoundFunction => {
  versions += 1;
  return { functionId: 'fn-1', versionId: `ver-${versions}`, version: versions, code };
};

const rename = bound(`export function transform(event) {
  if (event.type !== 'track') return event;
  const { email, ...rest } = event.properties ?? {};
  return { ...event, event: event.event.toLowerCase().replace(/ /g, '_'), properties: { ...rest, email_domain: email ? email.split('@')[1] : null } };
}`);
const dropBots = bound(`export function transform(event) {
  return event.context?.userAgent?.includes('bot') ? null : event;
}`);
const split = bound(`export function transform(event) {
  return (event.properties?.items ?? []).map((item) => ({ ...event, event: 'Item Bought', properties: { sku: item } }));
}`);
const throwsOnVip = bound(`export function transform(event) {
  if (event.properties?.vip) throw new TypeError('vip is not handled');
  if (event.properties?.bad) return { type: 'track' };
  return event;
}`);
const spins = bound(`export function transform(event) { while (true) {} }`);
const grantsConsent = bound(`export function transform(event) {
  return { ...event, context: { ...event.context, consent: { analytics: true, marketing: true } } };
}`);

describe('destination functions in the consumers (isolated-vm, real PostgreSQL, look-alikes)', () => {
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  let runtime: FunctionRuntime;
  let db: ScratchDatabase;
  let client: Client;
  let hook: LookAlikeServer;
  let amplitude: LookAlikeServer;
  let offset = 0;
  const outcomes: { writeKeyId: string; messageIds: readonly string[]; entry: DeliveryOutcomeEntry }[] = [];
  const recorder: OutcomeRecorder = {
    record: (writeKeyId, messageIds, entry) => outcomes.push({ writeKeyId, messageIds, entry }),
  };
  /** What each write key's lookup answers; a test binds its function here. */
  const tenants = new Map<string, TenantRecord>();

  const event = (over: Partial<TrackingEvent> = {}): TrackingEvent =>
    ({
      type: 'track',
      event: 'Order Completed',
      messageId: randomUUID(),
      anonymousId: 'anon-1',
      timestamp: '2026-11-30T10:00:00.000Z',
      properties: { order_id: 'o-1', email: 'ada@example.com' },
      ...over,
    }) as TrackingEvent;

  const record = (events: TrackingEvent[], writeKeyId = 'wk-1', account = accountId): DeliveryMessage => {
    const envelope: OutboxEnvelope = {
      v: 2,
      accountId: account,
      writeKeyId,
      batchId: randomUUID(),
      receivedAt: '2026-11-30T10:00:05.000Z',
      ip: null,
      userAgent: null,
      events,
    };
    offset += 1;
    return {
      topic: 'outbox',
      partition: 0,
      offset: String(offset),
      key: null,
      value: Buffer.from(JSON.stringify(envelope)),
      headers: {},
      timestamp: '0',
    };
  };

  /** `writeKeyId`'s tenant: its own integration of `server`'s kind, with `fn` bound. */
  const tenantWith = (writeKeyId: string, fn: BoundFunction | null, server = hook): void => {
    tenants.set(writeKeyId, {
      accountId,
      writeKeyId,
      status: 'active',
      allowedOrigins: [],
      destinations: [{ ...lookAlikeDestination(server), integrationId: `int-${writeKeyId}`, function: fn }],
      warehouse: null,
    });
  };

  const forwardingTo = (server: LookAlikeServer, step: FunctionStep | undefined) =>
    new ForwardingDestination(
      server.vendor === 'amplitude'
        ? new AmplitudeForwarder(vendorClientOptions({}, server.url))
        : new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 2000 })),
      new TenantDirectory({ lookup: async (id) => tenants.get(id) as TenantRecord }, { ttlMs: 1 }, logger),
      logger,
      {},
      recorder,
      step,
    );

  /** The warehouse consumer, every account on the scratch database, with `fn` bound to each. */
  const warehouseWith = (fn: BoundFunction | null, step: FunctionStep | undefined) => {
    const directory = new StaticWarehouseDirectory(warehouseConnectionFromUrl(db.url));
    return createDestination('warehouse', {
      logger,
      warehouseUrl: db.url,
      warehouseDirectory: {
        resolve: async (id) => ({ ...(await directory.resolve(id)), function: fn }),
        currentEpoch: () => 0,
        invalidate: () => undefined,
      },
      outcomes: recorder,
      ...(step ? { functions: step } : {}),
    });
  };

  const rows = async (messageIds: readonly string[]) =>
    (
      await client.query(
        `SELECT message_id, event, properties FROM ${schema}.events WHERE message_id = ANY($1) ORDER BY message_id`,
        [messageIds],
      )
    ).rows as { message_id: string; event: string; properties: Record<string, unknown> }[];
  const sent = (server: LookAlikeServer, messageId: string) =>
    server.accepted.filter(({ item }) => item.messageId === messageId).map(({ item }) => item);
  const eventsOf = (failure: FailedDelivery) => parseOutboxEnvelope(failure.value)?.events ?? [];

  beforeAll(async () => {
    runtime = createIsolatedVmRuntime();
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'function delivery');
    client = new Client({ connectionString: db.url });
    await client.connect();
    hook = await startLookAlikeVendor('webhook');
    amplitude = await startLookAlikeVendor('amplitude');
  });
  afterAll(async () => {
    await runtime.close();
    await client.end();
    await db.drop();
    await hook.close();
    await amplitude.close();
  });
  beforeEach(() => {
    outcomes.length = 0;
  });

  it('stores and forwards what the function made, the same in both', async () => {
    const step = new FunctionStep(runtime, logger);
    tenantWith('wk-1', rename);
    const order = event();
    const page = event({ type: 'page', properties: { path: '/' } } as Partial<TrackingEvent>);
    const message = record([order, page]);
    const warehouse = warehouseWith(rename, step);
    const stored = await warehouse.deliver([message]);
    const forwarded = await forwardingTo(hook, step).deliver([message]);
    expect(stored).toMatchObject({ delivered: 2, failed: [] });
    expect(forwarded).toMatchObject({ delivered: 2, failed: [] });

    expect(await rows([order.messageId])).toEqual([
      {
        message_id: order.messageId,
        event: 'order_completed',
        properties: { order_id: 'o-1', email_domain: 'example.com' },
      },
    ]);
    const [payload] = sent(hook, order.messageId);
    expect(payload).toMatchObject({
      event: 'order_completed',
      properties: { order_id: 'o-1', email_domain: 'example.com' },
    });
    expect(JSON.stringify(payload)).not.toContain('ada@');
    // A page is returned as it came.
    expect(sent(hook, page.messageId)).toHaveLength(1);
    await warehouse.close();
  });

  it('drops what the function drops, and tells the debugger why', async () => {
    const step = new FunctionStep(runtime, logger);
    tenantWith('wk-1', dropBots);
    const bot = event({ context: { userAgent: 'Googlebot/2.1' } });
    const person = event({ context: { userAgent: 'Mozilla/5.0' } });
    const message = record([bot, person]);
    const warehouse = warehouseWith(dropBots, step);
    expect(await warehouse.deliver([message])).toMatchObject({ delivered: 1, failed: [] });
    expect(await forwardingTo(hook, step).deliver([message])).toMatchObject({ delivered: 1, failed: [] });
    expect((await rows([bot.messageId, person.messageId])).map((r) => r.message_id)).toEqual([
      person.messageId,
    ]);
    expect(sent(hook, bot.messageId)).toEqual([]);
    expect(sent(hook, person.messageId)).toHaveLength(1);
    const dropped = outcomes.filter((o) => o.entry.reason?.startsWith('function_dropped:'));
    expect(dropped.map((o) => [o.entry.destination, o.messageIds])).toEqual([
      ['warehouse', [bot.messageId]],
      ['webhook', [bot.messageId]],
    ]);
    expect(dropped[0]?.entry.reason).toBe(
      `function_dropped: function fn-1 version ${dropBots.version} returned null`,
    );
    await warehouse.close();
  });

  it('splits one event into several with derived ids, and a redelivery adds none', async () => {
    const step = new FunctionStep(runtime, logger);
    tenantWith('wk-1', split);
    const basket = event({ properties: { items: ['a', 'b', 'c'] } });
    const message = record([basket]);
    const warehouse = warehouseWith(split, step);
    const ids = [0, 1, 2].map((i) => derivedMessageId(basket.messageId, i));
    for (let round = 0; round < 2; round += 1) {
      expect(await warehouse.deliver([message])).toMatchObject({ delivered: 3, failed: [] });
      await forwardingTo(hook, step).deliver([message]);
    }
    const stored = await rows([...ids, basket.messageId]);
    expect(stored.map((r) => [r.message_id, r.event, r.properties])).toEqual(
      [
        [ids[0], 'Item Bought', { sku: 'a' }],
        [ids[1], 'Item Bought', { sku: 'b' }],
        [ids[2], 'Item Bought', { sku: 'c' }],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    // The vendor got each twice with the same id: its own dedupe (insert_id, messageId) keeps one.
    expect(ids.map((id) => sent(hook, id).length)).toEqual([2, 2, 2]);
    await warehouse.close();
  });

  it('dead-letters what the function throws on or answers badly, with its version, and delivers the rest', async () => {
    const step = new FunctionStep(runtime, logger);
    tenantWith('wk-1', throwsOnVip);
    const vip = event({ properties: { vip: true } });
    const bad = event({ properties: { bad: true } });
    const fine = event();
    const message = record([vip, fine, bad]);
    const warehouse = warehouseWith(throwsOnVip, step);
    for (const report of [
      await warehouse.deliver([message]),
      await forwardingTo(hook, step).deliver([message]),
    ]) {
      expect(report.delivered).toBe(1);
      const byReason = report.failed.map((f) => [f.reason, f.retryable, eventsOf(f).map((e) => e.messageId)]);
      expect(byReason).toEqual(
        expect.arrayContaining([
          [
            `function_error: function fn-1 version ${throwsOnVip.version}: TypeError: vip is not handled`,
            false,
            [vip.messageId],
          ],
          [
            expect.stringMatching(`^function_output_invalid: function fn-1 version ${throwsOnVip.version}: `),
            false,
            [bad.messageId],
          ],
        ]),
      );
      expect(report.failed).toHaveLength(2);
      // The record's own event, as received, for a replay after a fix.
      expect(eventsOf(report.failed[0]!)[0]).toEqual(vip);
    }
    expect((await rows([vip.messageId, fine.messageId, bad.messageId])).map((r) => r.message_id)).toEqual([
      fine.messageId,
    ]);
    expect(sent(hook, vip.messageId)).toEqual([]);
    await warehouse.close();
  });

  it('retries a batch the function cannot finish, then holds it while the function is disabled, never sending it untransformed', async () => {
    const step = new FunctionStep(runtime, logger, {
      limits: { cpuMsPerEvent: 50, maxBatchCpuMs: 50 },
      breaker: { failures: 2, cooldownMs: 60_000 },
    });
    tenantWith('wk-1', spins);
    const stuck = event();
    const message = record([stuck]);
    const forwarding = forwardingTo(hook, step);
    const first = await forwarding.deliver([message]);
    expect(
      first.failed.map((f) => [f.reason.split(':')[0], f.retryable, f.holdUntilAvailable ?? false]),
    ).toEqual([['function_timeout', true, false]]);
    expect(eventsOf(first.failed[0]!)).toEqual([stuck]);
    await forwarding.deliver([message]);
    expect(step.isDisabled(spins.versionId)).toBe(true);
    const held = await forwarding.deliver([message]);
    expect(held.failed.map((f) => [f.reason.split(':')[0], f.retryable, f.holdUntilAvailable])).toEqual([
      ['function_disabled', true, true],
    ]);
    expect(held.failed[0]!.retryAfterMs).toBeGreaterThan(50_000);
    const warehouse = warehouseWith(spins, step);
    const heldThere = await warehouse.deliver([message]);
    expect(heldThere.failed.map((f) => f.reason.split(':')[0])).toEqual(['function_disabled']);
    expect(sent(hook, stuck.messageId)).toEqual([]);
    expect(await rows([stuck.messageId])).toEqual([]);
    await warehouse.close();
  });

  it('holds the events of a bound function when the consumer runs none', async () => {
    tenantWith('wk-1', rename);
    const e = event();
    const report = await forwardingTo(hook, undefined).deliver([record([e])]);
    expect(report.failed.map((f) => [f.reason.split(':')[0], f.holdUntilAvailable])).toEqual([
      ['function_unavailable', true],
    ]);
    expect(sent(hook, e.messageId)).toEqual([]);
  });

  it('decides consent on the input: a function can neither grant nor remove it', async () => {
    const step = new FunctionStep(runtime, logger);
    tenantWith('wk-1', grantsConsent, amplitude);
    const denied = event({ context: { consent: { analytics: false } } });
    const allowed = event({ context: { consent: { analytics: true, marketing: false } } });
    const report = await forwardingTo(amplitude, step).deliver([record([denied, allowed])]);
    expect(report).toMatchObject({ delivered: 1, consentSkipped: 1, failed: [] });
    expect(sent(amplitude, denied.messageId)).toEqual([]);
    tenantWith('wk-1', grantsConsent);
    await forwardingTo(hook, step).deliver([record([allowed])]);
    expect(sent(hook, allowed.messageId)[0]).toMatchObject({
      context: { consent: { analytics: true, marketing: false } },
    });
  });

  it("runs each tenant's function on its own events only, with its own state", async () => {
    const step = new FunctionStep(runtime, logger);
    const counting = (label: string) =>
      bound(`let seen = [];
export function transform(event, ctx) {
  seen.push(event.messageId);
  return { ...event, properties: { label: '${label}', writeKey: ctx.writeKeyId, seen: seen.slice() } };
}`);
    const a = counting('a');
    const b = counting('b');
    tenantWith('wk-a', a);
    tenantWith('wk-b', b);
    const a1 = event();
    const a2 = event();
    const b1 = event();
    await forwardingTo(hook, step).deliver([
      record([a1], 'wk-a'),
      record([b1], 'wk-b'),
      record([a2], 'wk-a'),
    ]);
    expect(sent(hook, a2.messageId)[0]?.properties).toEqual({
      label: 'a',
      writeKey: 'wk-a',
      seen: [a1.messageId, a2.messageId],
    });
    expect(sent(hook, b1.messageId)[0]?.properties).toEqual({
      label: 'b',
      writeKey: 'wk-b',
      seen: [b1.messageId],
    });
  });
});
