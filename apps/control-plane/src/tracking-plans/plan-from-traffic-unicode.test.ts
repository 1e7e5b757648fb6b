import fc from 'fast-check';
import { normalizeEvent, type TrackingEvent } from '@pipeline/events';
import { compilePlan, escapePointerToken, type JsonSchema } from '@pipeline/tracking-plans';
import { startHarness, type Harness } from '../testing/harness';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { eventOfRow } from './stored-events';
import type { GeneratedTrackingPlan } from './tracking-plan.dto';

// Member names cross JSON, jsonb and JSON Schema here: any name PostgreSQL stores (every code
// point but U+0000), `__proto__` and the JSON Pointer characters included, goes through the
// warehouse, comes back from it as sent, and is planned under its own name (or flagged, with
// its name escaped in the pointer) in a draft the same calls keep to.

const key = fc.oneof(
  fc.constantFrom('__proto__', '~', '/', '~1', '~0/', 'constructor', 'hasOwnProperty', ''),
  fc.string({ unit: 'binary', maxLength: 10 }).filter((k) => !k.includes('\u0000')),
);
const value = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 6 }).filter((v) => !v.includes('\u0000')),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.constant([1, 'a']),
  fc.constant({ nested: true }),
);
const calls = fc.array(fc.uniqueArray(fc.tuple(key, value), { selector: ([k]) => k, maxLength: 6 }), {
  minLength: 1,
  maxLength: 4,
});

const unescape = (token: string) => token.replace(/~1/g, '/').replace(/~0/g, '~');

describe('plans from traffic with any member name (real PostgreSQL warehouse)', () => {
  let scratch: ScratchWarehouse;
  let h: Harness;
  beforeAll(async () => {
    scratch = await startScratchWarehouse('plan traffic unicode');
    h = await startHarness('plan traffic unicode', {
      warehouse: scratch.warehouses,
      warehouseUrl: scratch.url,
    });
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await scratch.drop();
  });

  it('reads every name back, plans it or flags it escaped, and the calls keep to the draft', async () => {
    await fc.assert(
      fc.asyncProperty(calls, async (members) => {
        const tenant = await h.tenant();
        const sent = members.map(
          (entries, i) =>
            ({
              type: 'track',
              event: 'E',
              messageId: `m-${i}`,
              anonymousId: 'a',
              timestamp: new Date(Date.now() - 3_600_000 - i * 1000).toISOString(),
              // fromEntries defines members: "__proto__" is a property like any other.
              properties: Object.fromEntries(entries),
            }) as TrackingEvent,
        );
        await scratch.seed(
          tenant.accountId,
          sent.map((e) =>
            normalizeEvent(e, { receivedAt: new Date(e.timestamp), ip: null, userAgent: null }),
          ),
        );

        // Back from the warehouse as sent.
        const { engine, account } = await scratch.warehouses.locate(tenant.accountId);
        const rows = await engine.query(
          account,
          'traffic_rows',
          {
            table: 'events',
            since: new Date(Date.now() - 86_400_000),
            maxNames: 10,
            perName: 10,
            maxRows: 100,
          },
          { purpose: 'query' },
        );
        const back = new Map(rows.map(({ row }) => [row.message_id, eventOfRow('events', row).properties]));
        for (const event of sent)
          expect(back.get(event.messageId)).toEqual((event as { properties: unknown }).properties);

        const answer = await h
          .as(tenant.key)
          .post('/api/v1/tracking-plans/generate')
          .send({ name: 'Unicode', days: 1 });
        expect(answer.status).toBe(201);
        const data = answer.body.data as GeneratedTrackingPlan;
        const names = new Set(members.flatMap((entries) => entries.map(([k]) => k)));
        const [rule] = data.plan.draft.rules;
        const inner = (rule!.schema.properties as Record<string, JsonSchema>).properties!;
        const planned = Object.keys(inner.properties as object);
        expect(new Set(planned)).toEqual(new Set([...names].filter((k) => k !== '__proto__')));
        for (const flag of data.flagged) {
          const [, container, token, ...rest] = flag.path.split('/');
          expect([container, rest]).toEqual(['properties', []]);
          expect(token).toBe(escapePointerToken(unescape(token!)));
          expect(names.has(unescape(token!))).toBe(true);
          if (flag.reason === 'mixed_types')
            expect((inner.properties as Record<string, unknown>)[unescape(token!)]).toEqual({});
        }
        expect(data.flagged.some((f) => f.reason === 'unplannable_name')).toBe(names.has('__proto__'));
        // A draft whose rule names __proto__ is left open; otherwise it is closed.
        expect(inner.additionalProperties).toBe(names.has('__proto__') ? undefined : false);

        const compiled = compilePlan(data.plan.draft, { planId: data.plan.id, version: 0 });
        for (const event of sent) expect(compiled.validate(event as never)).toEqual([]);
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});
