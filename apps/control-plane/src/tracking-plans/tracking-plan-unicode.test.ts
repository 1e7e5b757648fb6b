import fc from 'fast-check';
import request from 'supertest';
import { canonicalJson, planHash, type TrackingPlan } from '@pipeline/tracking-plans';
import { startHarness, TEST_INTERNAL_TOKEN, type Harness, type Tenant } from '../testing/harness';

// A plan crosses JSON (the request and the answers) and SQL (the draft and the version as text):
// names and property keys of any Unicode, U+0000 and astral characters included, come back
// unchanged, with the same hash, through every way out.

/**
 * Names PostgreSQL's text can hold: no U+0000 (answered 400; tested in tracking-plans.test.ts).
 * fast-check's `binary` unit is any code point, never half a surrogate pair.
 */
const name = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 40 })
  .filter((value) => !value.includes('\u0000') && value.trim() !== '');
/** Property keys: anything but `__proto__` (checkPlan refuses it as a name ajv ignores). */
const key = fc.string({ unit: 'binary', maxLength: 20 }).filter((value) => value !== '__proto__');

const planOf = (eventName: string, keys: string[], description: string): TrackingPlan => ({
  rules: [
    {
      type: 'track',
      name: eventName,
      description,
      schema: {
        type: 'object',
        properties: {
          properties: {
            type: 'object',
            required: keys.slice(0, 1),
            properties: Object.fromEntries(keys.map((k, i) => [k, { type: 'string', enum: [`${k}${i}`] }])),
          },
        },
      },
    },
  ],
});

describe('tracking plans with any Unicode round-trip (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  beforeAll(async () => {
    h = await startHarness('tracking plan unicode');
    t = await h.tenant();
  });
  afterAll(() => h.close());

  it('keeps names, keys and values unchanged, with the same hash, through draft, version and ingestion', async () => {
    await fc.assert(
      fc.asyncProperty(
        name,
        name,
        fc.uniqueArray(key, { minLength: 1, maxLength: 6 }),
        fc.string({ unit: 'binary', maxLength: 60 }),
        async (planName, eventName, keys, description) => {
          const plan = planOf(eventName.slice(0, 200), keys, description);
          const created = await h.as(t.key).post('/api/v1/tracking-plans').send({ name: planName, plan });
          expect(created.status).toBe(201);
          const id = created.body.data.id as string;
          expect(created.body.data.name).toBe(planName);
          expect(canonicalJson(created.body.data.draft)).toBe(canonicalJson(plan));
          expect(created.body.data.draftHash).toBe(planHash(plan));

          const published = await h.as(t.key).post(`/api/v1/tracking-plans/${id}/publish`);
          expect(published.body.data.hash).toBe(planHash(plan));
          const version = await h.as(t.key).get(`/api/v1/tracking-plans/${id}/versions/1`);
          expect(planHash(version.body.data.plan)).toBe(planHash(plan));
          expect(version.body.data.plan).toEqual(plan);
          const internal = await request(h.app)
            .post('/internal/v1/tracking-plan-versions')
            .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
            .send({ accountId: t.accountId, planId: id, version: 1 });
          expect([internal.body.data.hash, planHash(internal.body.data.plan)]).toEqual([
            planHash(plan),
            planHash(plan),
          ]);
          const read = await h.as(t.key).get(`/api/v1/tracking-plans/${id}`);
          expect([read.body.data.name, read.body.data.draftChanged]).toEqual([planName, false]);
          await h.as(t.key).delete(`/api/v1/tracking-plans/${id}`).expect(204);
        },
      ),
      { numRuns: 40 },
    );
  });
});
