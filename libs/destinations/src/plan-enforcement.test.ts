import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { parseOutboxEnvelope, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor, type TenantRecord } from '@pipeline/tenancy';
import {
  compilePlan,
  type PlanPolicy,
  type PolicyAction,
  type TrackingPlan,
  type ViolationClass,
} from '@pipeline/tracking-plans';
import type { DeliveryMessage, Destination, FailedDelivery } from './destination';
import { createDestination } from './destination-kinds';
import { vendorClientOptions } from './forwarding/forwarder';
import { ForwardingDestination } from './forwarding/forwarding-destination';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from './forwarding/testing/vendor-server';
import { WebhookForwarder } from './forwarding/vendors/webhook/webhook-forwarder';
import { PLAN_QUARANTINED } from './plan-decisions';
import { TenantDirectory } from './tenant-directory';
import { startClickHouseWarehouse, type ClickHouseWarehouse } from './testing/clickhouse-warehouse';
import { clickhouseTableRows, postgresTableRows } from './testing/warehouse-table-rows';

// A tracking plan's policy in the consumers (docs/tracking-plans.md, "Enforcement"): each
// violation class under each action it allows, against the real warehouse (PostgreSQL) and a
// webhook look-alike. The verdicts are a real plan's (compilePlan), as ingestion's door makes them.
const logger = createLogger({ service: 'plan-enforcement-test', stream: new PassThrough() });

const plan: TrackingPlan = {
  common: {
    type: 'object',
    properties: {
      context: {
        type: 'object',
        properties: {
          campaign: { type: 'object', properties: { source: { type: 'string', maxLength: 8 } } },
        },
      },
    },
  },
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        type: 'object',
        properties: {
          properties: {
            type: 'object',
            required: ['order_id'],
            additionalProperties: false,
            properties: { order_id: { type: 'string' }, total: { type: 'number' } },
          },
        },
      },
    },
  ],
};
const compiled = compilePlan(plan, { planId: 'plan-1', version: 3 });

/** One event per class, and the value `omit` strips from it (none for the two classes it refuses). */
const offenders: Record<ViolationClass, { over: Partial<TrackingEvent>; path?: string; column?: string }> = {
  unplanned_event: { over: { event: 'Order Complete' } as Partial<TrackingEvent> },
  unplanned_property: {
    over: { properties: { order_id: 'o-1', total: 1, coupon: 'FREE' } },
    path: '/properties/coupon',
  },
  missing_required: { over: { properties: { total: 1 } } },
  wrong_value: { over: { properties: { order_id: 'o-1', total: '12' } }, path: '/properties/total' },
  common_schema: {
    over: { properties: { order_id: 'o-1' }, context: { campaign: { source: 'newsletter-spring' } } },
    path: '/context/campaign/source',
    column: 'context_campaign_source',
  },
};
const actionsOf: Record<ViolationClass, PolicyAction[]> = {
  unplanned_event: ['allow', 'quarantine'],
  unplanned_property: ['allow', 'omit', 'quarantine'],
  missing_required: ['allow', 'quarantine'],
  wrong_value: ['allow', 'omit', 'quarantine'],
  common_schema: ['allow', 'omit', 'quarantine'],
};
const cells = (Object.keys(actionsOf) as ViolationClass[]).flatMap((violationClass) =>
  actionsOf[violationClass].map((action) => [violationClass, action] as const),
);

describe('tracking plan policies in the consumers (real PostgreSQL, webhook look-alike)', () => {
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  let db: ScratchDatabase;
  let client: Client;
  let hook: LookAlikeServer;
  let warehouse: Destination;
  let forwarding: ForwardingDestination;
  let offset = 0;

  const event = (over: Partial<TrackingEvent>): TrackingEvent =>
    ({
      type: 'track',
      event: 'Order Completed',
      messageId: randomUUID(),
      anonymousId: 'anon-1',
      timestamp: '2026-11-29T10:00:00.000Z',
      properties: { order_id: 'o-1', total: 1 },
      ...over,
    }) as TrackingEvent;

  /** An outbox record of `events` checked against the plan (or not: `unchecked`), under `policy`. */
  const record = (events: TrackingEvent[], policy: PlanPolicy, unchecked = false): DeliveryMessage => {
    const envelope: OutboxEnvelope = {
      v: 2,
      accountId,
      writeKeyId: 'wk-1',
      batchId: randomUUID(),
      receivedAt: '2026-11-29T10:00:05.000Z',
      ip: null,
      userAgent: null,
      events,
      plan: { planId: 'plan-1', version: 3, policy },
      verdicts: events.map((e) =>
        unchecked ? { version: null, violations: [] } : { version: 3, violations: compiled.validate(e) },
      ),
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

  const stored = async (messageId: string) =>
    (await client.query(`SELECT * FROM ${schema}.events WHERE message_id = $1`, [messageId])).rows[0] as
      Record<string, unknown> | undefined;
  const sent = (messageId: string) =>
    hook.accepted.filter(({ item }) => item.messageId === messageId).map(({ item }) => item);
  const quarantined = (failed: readonly FailedDelivery[], messageId: string) =>
    failed.filter(
      (f) =>
        f.reason.startsWith(`${PLAN_QUARANTINED}:`) &&
        parseOutboxEnvelope(f.value)?.events.some((e) => e.messageId === messageId),
    );

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'plan enforcement');
    client = new Client({ connectionString: db.url });
    await client.connect();
    hook = await startLookAlikeVendor('webhook');
    warehouse = createDestination('warehouse', { logger, warehouseUrl: db.url });
    const tenant: TenantRecord = {
      accountId,
      writeKeyId: 'wk-1',
      status: 'active',
      allowedOrigins: [],
      destinations: [lookAlikeDestination(hook)],
      warehouse: null,
    };
    forwarding = new ForwardingDestination(
      new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 2000 })),
      new TenantDirectory({ lookup: async () => tenant }, { ttlMs: 60_000 }, logger),
      logger,
    );
  });
  afterAll(async () => {
    await warehouse.close?.();
    await client.end();
    await db.drop();
    await hook.close();
  });

  it.each(cells)(
    '%s under %s: the same in the warehouse row and the forwarded payload',
    async (violationClass, action) => {
      const offender = offenders[violationClass];
      const clean = event({});
      const bad = event(offender.over);
      const violations = compiled.validate(bad);
      expect(violations.map((v) => v.code)).toEqual([
        violationClass === 'wrong_value' ? 'type_mismatch' : violationClass,
      ]);
      const message = record([clean, bad], { actions: { [violationClass]: action } });
      const intoWarehouse = await warehouse.deliver([message]);
      const forwarded = await forwarding.deliver([message]);

      // The clean event goes everywhere, whatever the policy, with no plan column.
      expect((await stored(clean.messageId))?.plan_violations).toBeNull();
      expect(sent(clean.messageId)).toHaveLength(1);

      const row = await stored(bad.messageId);
      const payloads = sent(bad.messageId);
      if (action === 'quarantine') {
        expect(row).toBeUndefined();
        expect(payloads).toEqual([]);
        for (const failed of [intoWarehouse.failed, forwarded.failed]) {
          const letters = quarantined(failed, bad.messageId);
          expect(letters).toHaveLength(1);
          expect(letters[0]?.retryable).toBe(false);
          // Kept whole, with its verdict beside it, and nothing else of the record.
          const kept = parseOutboxEnvelope(letters[0]?.value ?? null);
          expect(kept?.events).toEqual([bad]);
          expect(kept?.verdicts).toEqual([{ version: 3, violations }]);
        }
        expect(intoWarehouse.failed).toHaveLength(1);
        expect(forwarded.failed).toHaveLength(1);
        return;
      }
      expect(intoWarehouse.failed).toEqual([]);
      expect(forwarded.failed).toEqual([]);
      expect(row?.plan_violations).toEqual({
        planId: 'plan-1',
        version: 3,
        violations,
        action,
        omitted: action === 'omit' ? [offender.path] : [],
      });
      expect(payloads).toHaveLength(1);
      const payload = payloads[0] as Record<string, Record<string, unknown>>;
      if (action === 'omit') {
        if (offender.column) {
          expect(row?.[offender.column]).toBeNull();
          expect(payload.context?.campaign).toEqual({});
        } else {
          const name = (offender.path as string).split('/')[2] as string;
          expect(row?.properties).not.toHaveProperty([name]);
          expect(payload.properties).not.toHaveProperty([name]);
          expect(row?.properties).toEqual(payload.properties);
        }
      } else {
        expect(row?.properties).toEqual(bad.properties ?? {});
        expect(payload.properties).toEqual(bad.properties);
        if (offender.column) expect(row?.[offender.column]).toBe('newsletter-spring');
      }
    },
  );

  it('lets the warehouse take what a vendor is kept from', async () => {
    const bad = event(offenders.unplanned_property.over);
    const message = record([bad], {
      actions: { unplanned_property: 'quarantine' },
      destinations: { warehouse: { unplanned_property: 'allow' } },
    });
    expect((await warehouse.deliver([message])).failed).toEqual([]);
    const forwarded = await forwarding.deliver([message]);
    expect((await stored(bad.messageId))?.properties).toEqual({ order_id: 'o-1', total: 1, coupon: 'FREE' });
    expect(sent(bad.messageId)).toEqual([]);
    expect(quarantined(forwarded.failed, bad.messageId)).toHaveLength(1);
  });

  it('stores the same rows in ClickHouse as in PostgreSQL, plan column and stripped values alike', async () => {
    const ch: ClickHouseWarehouse = await startClickHouseWarehouse();
    const intoClickHouse = createDestination('warehouse', {
      logger,
      warehouseUrl: ch.url,
      egressAllowPrivateRanges: ['127.0.0.0/8'],
    });
    try {
      const policy: PlanPolicy = {
        actions: {
          unplanned_property: 'omit',
          wrong_value: 'allow',
          common_schema: 'omit',
          unplanned_event: 'quarantine',
        },
      };
      const identify = event({
        type: 'identify',
        userId: 'u-1',
        traits: { email: 'a@example.com', plan: 'pro' },
      } as Partial<TrackingEvent>);
      const events = [
        event({}),
        ...(['unplanned_property', 'wrong_value', 'common_schema', 'unplanned_event'] as const).map((c) =>
          event(offenders[c].over),
        ),
        identify,
      ];
      // The plan has no identify rule: the user's row is stored with no plan column.
      const message = record(events, policy);
      for (const destination of [warehouse, intoClickHouse])
        expect((await destination.deliver([message])).failed.map((f) => f.reason)).toEqual([
          expect.stringMatching(/^plan_quarantined: /),
        ]);
      for (const table of ['events', 'users'] as const) {
        const ids = new Set(events.map((e) => e.messageId));
        const inPostgres = (await postgresTableRows(db.url, schema, table)).filter((r) =>
          ids.has(r.message_id as string),
        );
        const inClickHouse = await clickhouseTableRows(ch.client, schema, table);
        expect(inClickHouse).toEqual(inPostgres);
        expect(inPostgres).toHaveLength(table === 'events' ? 4 : 1);
      }
      const [stripped] = (await clickhouseTableRows(ch.client, schema, 'events')).filter(
        (r) => r.message_id === events[1]?.messageId,
      );
      expect(stripped?.properties).toEqual({ order_id: 'o-1', total: 1 });
      expect(stripped?.plan_violations).toMatchObject({ action: 'omit', omitted: ['/properties/coupon'] });
    } finally {
      await intoClickHouse.close?.();
      await ch.destroy();
    }
  });

  it('delivers an event the door could not check, flagged in its row', async () => {
    const bad = event(offenders.unplanned_property.over);
    const message = record([bad], { actions: { unplanned_property: 'quarantine' } }, true);
    expect((await warehouse.deliver([message])).failed).toEqual([]);
    expect((await forwarding.deliver([message])).failed).toEqual([]);
    expect((await stored(bad.messageId))?.plan_violations).toEqual({
      planId: 'plan-1',
      version: null,
      violations: [],
      action: 'allow',
      omitted: [],
    });
    expect(sent(bad.messageId)).toHaveLength(1);
  });
});
