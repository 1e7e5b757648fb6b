import request from 'supertest';
import { canonicalJson, planHash, type TrackingPlan } from '@pipeline/tracking-plans';
import {
  startHarness,
  TEST_INTERNAL_TOKEN,
  testDeliveryToken,
  type Harness,
  type Tenant,
} from '../testing/harness';
import { defaultTrackingPlanLimits } from './tracking-plan-limits';

// The tracking-plan API against a real control plane and PostgreSQL: drafts, publishing,
// immutable versions, diff, imports and exports, bindings resolved for ingestion, isolation
// between accounts, and bad input answered with its documented code and nothing changed.

const orderV1: TrackingPlan = {
  common: { type: 'object', required: ['context'] },
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        type: 'object',
        required: ['properties'],
        properties: {
          properties: {
            type: 'object',
            required: ['order_id'],
            properties: { order_id: { type: 'string', pattern: '^o-[0-9]+$' } },
          },
        },
      },
    },
  ],
};

const orderV2: TrackingPlan = {
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        type: 'object',
        required: ['properties'],
        properties: {
          properties: {
            type: 'object',
            required: ['order_id', 'subtotal'],
            properties: { order_id: { type: 'string', pattern: '^o-[0-9]+$' }, subtotal: { type: 'number' } },
          },
        },
      },
    },
    { type: 'identify', schema: { properties: { traits: { required: ['email'] } } } },
  ],
};

const cyclic = {
  rules: [
    {
      type: 'track',
      name: 'Loop',
      schema: {
        definitions: { a: { $ref: '#/definitions/b' }, b: { $ref: '#/definitions/a' } },
        properties: { properties: { $ref: '#/definitions/a' } },
      },
    },
  ],
};

const segmentRules = {
  rules: [
    {
      type: 'TRACK',
      key: 'Product Viewed',
      version: 2,
      jsonSchema: { properties: { properties: { required: ['sku'] } } },
    },
    { type: 'IDENTIFY', version: 1, jsonSchema: { properties: { traits: { required: ['email'] } } } },
    { type: 'COMMON', version: 1, jsonSchema: { required: ['context'] } },
  ],
};

const rudderEvents = `version: rudder/0.1
kind: events
metadata:
  name: app_events
spec:
  events:
    - id: signed_up
      name: "Signed Up"
      event_type: track
`;
const rudderProperties = `version: rudder/0.1
kind: properties
metadata:
  name: props
spec:
  properties:
    - id: plan
      name: "plan"
      type: string
      config:
        enum: [free, pro]
`;
const rudderPlan = `version: rudder/0.1
kind: tp
metadata:
  name: main
spec:
  id: main
  display_name: "Main plan"
  rules:
    - type: event_rule
      id: signed_up
      event:
        $ref: "#/events/app_events/signed_up"
      allow_unplanned: false
      properties:
        - $ref: "#/properties/props/plan"
          required: true
`;

describe('tracking plans API (real PostgreSQL)', () => {
  let h: Harness;
  let a: Tenant;
  let b: Tenant;

  beforeAll(async () => {
    h = await startHarness('tracking plans');
    a = await h.tenant();
    b = await h.tenant();
  });
  afterAll(() => h.close());

  const createPlan = async (tenant: Tenant, body: Record<string, unknown>) => {
    const res = await h.as(tenant.key).post('/api/v1/tracking-plans').send(body);
    expect(res.status).toBe(201);
    return res.body.data as { id: string; draftHash: string };
  };
  const writeKey = async (tenant: Tenant) =>
    (await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data as {
      id: string;
      key: string;
    };
  const resolveInternally = async (key: string) => {
    const res = await request(h.app)
      .post('/internal/v1/write-keys/resolve')
      .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
      .send({ writeKey: key });
    expect(res.status).toBe(200);
    return res.body.data as { trackingPlan?: unknown };
  };
  const draftHashIn = async (planId: string) =>
    (
      (await h.db.dataSource.query('SELECT draft_hash FROM tracking_plans WHERE id = $1', [planId])) as {
        draft_hash: string;
      }[]
    )[0]?.draft_hash;

  it('creates, lists, reads and renames a plan; its draft is the plan given', async () => {
    const created = await h
      .as(a.key)
      .post('/api/v1/tracking-plans')
      .send({ name: 'Checkout', description: 'Orders', plan: orderV1 });
    expect(created.status).toBe(201);
    const plan = created.body.data;
    expect(plan).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Checkout',
      description: 'Orders',
      latestVersion: null,
      draftHash: planHash(orderV1),
      draftChanged: true,
      boundWriteKeys: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      draft: orderV1,
    });
    const empty = await h.as(a.key).post('/api/v1/tracking-plans').send({ name: 'Empty' });
    expect([empty.status, empty.body.data.draft]).toEqual([201, { rules: [] }]);

    const listed = await h.as(a.key).get('/api/v1/tracking-plans?limit=1');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((p: { name: string }) => p.name)).toEqual(['Empty']);
    expect(listed.body.data[0].draft).toBeUndefined();
    expect(listed.body.pagination).toEqual({ total: 2, limit: 1, offset: 0, nextOffset: 1 });

    const renamed = await h
      .as(a.key)
      .patch(`/api/v1/tracking-plans/${plan.id}`)
      .send({ name: 'Checkout flow', description: '' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'Checkout flow', description: '', draft: orderV1 });
    expect((await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}`)).body.data.name).toBe('Checkout flow');

    const blank = await h.as(a.key).post('/api/v1/tracking-plans').send({ name: '   ' });
    expect([blank.status, blank.body.code, blank.body.errors]).toEqual([
      400,
      'validation_failed',
      [{ path: 'body.name', message: 'must not be blank' }],
    ]);
    const nul = await h.as(a.key).post('/api/v1/tracking-plans').send({ name: 'a\u0000b' });
    expect([nul.status, nul.body.errors[0].path]).toEqual([400, 'body.name']);
    const lone = await h.as(a.key).patch(`/api/v1/tracking-plans/${plan.id}`).send({ name: 'x\ud800' });
    expect([lone.status, lone.body.errors[0].path]).toEqual([400, 'body.name']);
    expect(await h.as(a.key).delete(`/api/v1/tracking-plans/${empty.body.data.id}`)).toHaveProperty(
      'status',
      204,
    );
  });

  it('refuses an invalid draft with every problem and its pointer, changing nothing', async () => {
    const plan = await createPlan(a, { name: 'Strict', plan: orderV1 });

    const cycle = await h.as(a.key).put(`/api/v1/tracking-plans/${plan.id}/draft`).send(cyclic);
    expect(cycle.status).toBe(422);
    expect(cycle.body.code).toBe('invalid_tracking_plan');
    expect(cycle.body.errors).toEqual([
      {
        code: 'ref_cycle',
        path: '/rules/0/schema/definitions/b/$ref',
        message: '$ref "#/definitions/a" leads back to itself',
      },
      {
        code: 'ref_cycle',
        path: '/rules/0/schema/definitions/a/$ref',
        message: '$ref "#/definitions/b" leads back to itself',
      },
    ]);

    const misspelled = await h
      .as(a.key)
      .put(`/api/v1/tracking-plans/${plan.id}/draft`)
      .send({ rules: [{ type: 'track', name: 'A', schema: { type: 'object', requird: ['x'] } }] });
    expect([misspelled.status, misspelled.body.errors[0].code, misspelled.body.errors[0].path]).toEqual([
      422,
      'schema_invalid',
      '/rules/0/schema',
    ]);

    const oversized = await h
      .as(a.key)
      .put(`/api/v1/tracking-plans/${plan.id}/draft`)
      .send({ rules: [{ type: 'track', name: 'Big', schema: { description: 'x'.repeat(70_000) } }] });
    expect(oversized.status).toBe(422);
    expect(oversized.body.errors).toEqual([
      {
        code: 'schema_too_large',
        path: '/rules/0/schema',
        message: 'schema is 70018 bytes; at most 65536 are accepted',
      },
    ]);

    const notAPlan = await h
      .as(a.key)
      .put(`/api/v1/tracking-plans/${plan.id}/draft`)
      .send({ rules: [], extra: 1 });
    expect([notAPlan.status, notAPlan.body.errors[0]]).toEqual([
      422,
      { code: 'invalid_document', path: '/extra', message: 'plan must NOT have additional properties' },
    ]);
    const onCreate = await h.as(a.key).post('/api/v1/tracking-plans').send({ name: 'Loop', plan: cyclic });
    expect([onCreate.status, onCreate.body.code]).toEqual([422, 'invalid_tracking_plan']);

    expect(await draftHashIn(plan.id)).toBe(planHash(orderV1));
    expect((await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}`)).body.data.draft).toEqual(orderV1);
  });

  it('publishes, edits, publishes: each version byte-identical and hashed as published', async () => {
    const plan = await createPlan(a, { name: 'Versions', plan: orderV1 });
    const first = await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`);
    expect(first.status).toBe(201);
    expect(first.body.data).toEqual({
      planId: plan.id,
      version: 1,
      hash: planHash(orderV1),
      publishedAt: expect.any(String),
      publishedByApiKeyId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      plan: orderV1,
    });
    const v1Before = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/1`);
    expect(v1Before.status).toBe(200);

    const again = await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`);
    expect([again.status, again.body.code]).toEqual([409, 'draft_unchanged']);

    const edited = await h.as(a.key).put(`/api/v1/tracking-plans/${plan.id}/draft`).send(orderV2);
    expect(edited.status).toBe(200);
    expect(edited.body.data).toMatchObject({
      latestVersion: 1,
      draftChanged: true,
      draftHash: planHash(orderV2),
    });
    const second = await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`);
    expect([second.status, second.body.data.version, second.body.data.hash]).toEqual([
      201,
      2,
      planHash(orderV2),
    ]);

    const v1After = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/1`);
    expect(v1After.text).toBe(v1Before.text);
    expect(v1After.body.data.hash).toBe(planHash(orderV1));
    expect(planHash(v1After.body.data.plan)).toBe(v1After.body.data.hash);
    const [stored] = (await h.db.dataSource.query(
      'SELECT document, hash FROM tracking_plan_versions WHERE plan_id = $1 AND version = 1',
      [plan.id],
    )) as { document: string; hash: string }[];
    expect(stored).toEqual({ document: canonicalJson(orderV1), hash: planHash(orderV1) });
    const v2 = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/2`);
    expect([v2.body.data.plan, v2.body.data.hash]).toEqual([orderV2, planHash(orderV2)]);

    const versions = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions`);
    expect(versions.body.data.map((v: { version: number; hash: string }) => [v.version, v.hash])).toEqual([
      [2, planHash(orderV2)],
      [1, planHash(orderV1)],
    ]);
    expect(versions.body.pagination).toEqual({ total: 2, limit: 20, offset: 0, nextOffset: null });
    expect((await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}`)).body.data).toMatchObject({
      latestVersion: 2,
      draftChanged: false,
    });

    for (const edit of [
      h.as(a.key).put(`/api/v1/tracking-plans/${plan.id}/versions/1`).send(orderV2),
      h.as(a.key).patch(`/api/v1/tracking-plans/${plan.id}/versions/1`).send({}),
      h.as(a.key).delete(`/api/v1/tracking-plans/${plan.id}/versions/1`),
    ]) {
      const refused = await edit;
      expect([refused.status, refused.body.code]).toEqual([409, 'version_immutable']);
    }
    const missing = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/3`);
    expect([missing.status, missing.body.code]).toEqual([404, 'tracking_plan_version_not_found']);
    const notAVersion = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/0`);
    expect([notAVersion.status, notAVersion.body.code]).toEqual([400, 'validation_failed']);
    expect((await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/1`)).text).toBe(v1Before.text);
  });

  it('diffs two versions and a version with the draft, classifying each change', async () => {
    const plan = await createPlan(a, { name: 'Diff', plan: orderV1 });
    await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
    await h.as(a.key).put(`/api/v1/tracking-plans/${plan.id}/draft`).send(orderV2).expect(200);
    await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);

    const diff = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/diff?from=1&to=2`);
    expect(diff.status).toBe(200);
    expect(diff.body.data).toEqual({
      from: 1,
      to: 2,
      counts: { breaking: 1, revision: 2, addition: 1 },
      changes: expect.any(Array),
    });
    expect(
      diff.body.data.changes.map(
        (c: { change: string; kind: string; path: string; rule: { type: string } }) => [
          c.rule.type,
          c.change,
          c.kind,
          c.path,
        ],
      ),
    ).toEqual([
      // v2 dropped the common schema: what it required is no longer required.
      ['common', 'type_widened', 'revision', ''],
      ['common', 'required_removed', 'revision', '/context'],
      ['track', 'required_added', 'breaking', '/properties/subtotal'],
      ['identify', 'rule_added', 'addition', ''],
    ]);

    // The draft equals v2: nothing changed; against v1 the same as v2.
    const toDraft = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/diff?from=2`);
    expect(toDraft.body.data).toEqual({
      from: 2,
      to: 'draft',
      counts: { breaking: 0, revision: 0, addition: 0 },
      changes: [],
    });
    expect(
      (await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/diff?from=1&to=draft`)).body.data.changes,
    ).toEqual(diff.body.data.changes);
    const missing = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/diff?from=1&to=9`);
    expect([missing.status, missing.body.code]).toEqual([404, 'tracking_plan_version_not_found']);
    const bad = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/diff?from=1&to=latest`);
    expect([bad.status, bad.body.errors]).toEqual([
      400,
      [{ path: 'query.to', message: 'must be a version (an integer of 1 or more) or draft' }],
    ]);
  });

  it('imports Segment rules and a Rudder CLI project as drafts, and exports a version as Segment rules', async () => {
    const segment = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({ format: 'segment', name: 'From Segment', content: segmentRules });
    expect(segment.status).toBe(201);
    expect(segment.body.data).toMatchObject({ name: 'From Segment', latestVersion: null });
    expect(segment.body.data.draft).toEqual({
      common: { required: ['context'] },
      rules: [
        {
          type: 'track',
          name: 'Product Viewed',
          version: 2,
          schema: { properties: { properties: { required: ['sku'] } } },
        },
        { type: 'identify', version: 1, schema: { properties: { traits: { required: ['email'] } } } },
      ],
    });
    const id = segment.body.data.id as string;
    await h.as(a.key).post(`/api/v1/tracking-plans/${id}/publish`).expect(201);
    const exported = await h.as(a.key).get(`/api/v1/tracking-plans/${id}/versions/1/export?format=segment`);
    expect(exported.status).toBe(200);
    expect(exported.body.data.rules).toEqual(expect.arrayContaining(segmentRules.rules));
    expect(exported.body.data.rules).toHaveLength(3);
    // Segment's own answer shape imports back to the same plan.
    const back = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({ format: 'segment', name: 'Round trip', content: JSON.stringify(exported.body) });
    expect(back.body.data.draftHash).toBe(segment.body.data.draftHash);

    const rudder = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({
        format: 'rudderstack',
        name: 'From Rudder',
        content: [rudderEvents, rudderProperties, rudderPlan],
      });
    expect(rudder.status).toBe(201);
    expect(rudder.body.data.draft.rules).toEqual([
      {
        type: 'track',
        name: 'Signed Up',
        schema: {
          type: 'object',
          required: ['properties'],
          properties: {
            properties: {
              type: 'object',
              additionalProperties: false,
              required: ['plan'],
              properties: { plan: { type: 'string', enum: ['free', 'pro'] } },
            },
          },
        },
      },
    ]);

    const before = Number((await h.as(a.key).get('/api/v1/tracking-plans')).body.pagination.total);
    const notJson = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({ format: 'segment', name: 'Broken', content: '{rules' });
    expect([notJson.status, notJson.body.code, notJson.body.errors]).toEqual([
      422,
      'invalid_import',
      [{ code: 'invalid_input', path: '', message: 'is not JSON' }],
    ]);
    const unmappable = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({
        format: 'segment',
        name: 'Deprecated',
        content: {
          rules: [{ type: 'TRACK', key: 'Old', version: 1, jsonSchema: {}, deprecatedAt: '2024-01-01' }],
        },
      });
    expect([unmappable.status, unmappable.body.code, unmappable.body.errors[0].code]).toEqual([
      422,
      'invalid_import',
      'not_mappable',
    ]);
    const yamlAsObject = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({ format: 'rudderstack', name: 'Object', content: { kind: 'tp' } });
    expect([yamlAsObject.status, yamlAsObject.body.code]).toEqual([422, 'invalid_import']);
    const cyclicSegment = await h
      .as(a.key)
      .post('/api/v1/tracking-plans/import')
      .send({
        format: 'segment',
        name: 'Cyclic',
        content: { rules: [{ type: 'TRACK', key: 'Loop', version: 1, jsonSchema: cyclic.rules[0]!.schema }] },
      });
    expect([cyclicSegment.status, cyclicSegment.body.code, cyclicSegment.body.errors[0].code]).toEqual([
      422,
      'invalid_tracking_plan',
      'ref_cycle',
    ]);
    expect(Number((await h.as(a.key).get('/api/v1/tracking-plans')).body.pagination.total)).toBe(before);

    const alias = await createPlan(a, { name: 'Alias', plan: { rules: [{ type: 'alias', schema: {} }] } });
    await h.as(a.key).post(`/api/v1/tracking-plans/${alias.id}/publish`).expect(201);
    const refused = await h
      .as(a.key)
      .get(`/api/v1/tracking-plans/${alias.id}/versions/1/export?format=segment`);
    expect([refused.status, refused.body.code, refused.body.errors[0].code]).toEqual([
      422,
      'not_exportable',
      'not_mappable',
    ]);
  });

  it('binds a key pinned to v1 and another at latest: after v2 one resolves to 1, the other to 2', async () => {
    const plan = await createPlan(a, { name: 'Bound', plan: orderV1 });
    const pinnedKey = await writeKey(a);
    const latestKey = await writeKey(a);
    const policy = {
      actions: { unplanned_event: 'quarantine', unplanned_property: 'omit' },
      destinations: { warehouse: { unplanned_event: 'allow' } },
    };

    const early = await h
      .as(a.key)
      .put(`/api/v1/write-keys/${pinnedKey.id}/tracking-plan`)
      .send({ planId: plan.id, version: 'latest', policy });
    expect([early.status, early.body.code]).toEqual([409, 'tracking_plan_not_published']);
    await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);

    const pinned = await h
      .as(a.key)
      .put(`/api/v1/write-keys/${pinnedKey.id}/tracking-plan`)
      .send({ planId: plan.id, version: 1, policy });
    expect(pinned.status).toBe(200);
    expect(pinned.body.data).toEqual({
      writeKeyId: pinnedKey.id,
      planId: plan.id,
      binding: 'pinned',
      version: 1,
      policy,
      updatedAt: expect.any(String),
    });
    const latest = await h
      .as(a.key)
      .put(`/api/v1/write-keys/${latestKey.id}/tracking-plan`)
      .send({ planId: plan.id, version: 'latest', policy: { actions: {} } });
    expect(latest.body.data).toMatchObject({ binding: 'latest', version: 1, policy: { actions: {} } });

    await h.as(a.key).put(`/api/v1/tracking-plans/${plan.id}/draft`).send(orderV2).expect(200);
    await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);

    expect((await h.services.writeKeyResolver.resolve(pinnedKey.key)).trackingPlan).toEqual({
      planId: plan.id,
      binding: 'pinned',
      version: 1,
      policy,
    });
    expect((await h.services.writeKeyResolver.resolve(latestKey.key)).trackingPlan).toEqual({
      planId: plan.id,
      binding: 'latest',
      version: 2,
      policy: { actions: {} },
    });
    expect((await resolveInternally(pinnedKey.key)).trackingPlan).toEqual({
      planId: plan.id,
      binding: 'pinned',
      version: 1,
      policy,
    });
    expect((await resolveInternally(latestKey.key)).trackingPlan).toMatchObject({
      binding: 'latest',
      version: 2,
    });
    // The delivery consumers' lookup carries it too.
    const lookedUp = await request(h.app)
      .post('/internal/v1/write-keys/lookup')
      .set('Authorization', `Bearer ${testDeliveryToken('webhook')}`)
      .send({ writeKeyId: latestKey.id });
    expect(lookedUp.body.data.trackingPlan).toMatchObject({ planId: plan.id, version: 2 });
    expect(
      (await h.as(a.key).get(`/api/v1/write-keys/${latestKey.id}/tracking-plan`)).body.data,
    ).toMatchObject({
      binding: 'latest',
      version: 2,
    });
    expect((await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}`)).body.data.boundWriteKeys).toBe(2);

    // What ingestion compiles: each version as published.
    const version = async (v: number, accountId = a.accountId, token = TEST_INTERNAL_TOKEN) =>
      request(h.app)
        .post('/internal/v1/tracking-plan-versions')
        .set('Authorization', `Bearer ${token}`)
        .send({ accountId, planId: plan.id, version: v });
    expect((await version(1)).body).toEqual({
      data: { planId: plan.id, version: 1, hash: planHash(orderV1), plan: orderV1 },
    });
    expect((await version(2)).body.data.hash).toBe(planHash(orderV2));
    const none = await version(3);
    expect([none.status, none.body.code]).toEqual([404, 'tracking_plan_version_not_found']);
    const otherAccount = await version(1, b.accountId);
    expect([otherAccount.status, otherAccount.body.code]).toEqual([404, 'tracking_plan_version_not_found']);
    const malformed = await version(1, 'not-a-uuid');
    expect([malformed.status, malformed.body.code]).toEqual([404, 'tracking_plan_version_not_found']);
    // Another caller's token is answered as an unknown one, and so is an API key.
    const consumer = await version(1, a.accountId, testDeliveryToken('webhook'));
    expect([consumer.status, consumer.body.code]).toEqual([401, 'invalid_service_token']);
    const apiKey = await version(1, a.accountId, a.key);
    expect([apiKey.status, apiKey.body.code]).toEqual([401, 'invalid_service_token']);

    const inUse = await h.as(a.key).delete(`/api/v1/tracking-plans/${plan.id}`);
    expect([inUse.status, inUse.body.code]).toEqual([409, 'tracking_plan_in_use']);

    await h.as(a.key).delete(`/api/v1/write-keys/${pinnedKey.id}/tracking-plan`).expect(204);
    await h.as(a.key).delete(`/api/v1/write-keys/${pinnedKey.id}/tracking-plan`).expect(204);
    await h.as(a.key).delete(`/api/v1/write-keys/${latestKey.id}/tracking-plan`).expect(204);
    expect((await h.services.writeKeyResolver.resolve(pinnedKey.key)).trackingPlan).toBeNull();
    expect((await resolveInternally(latestKey.key)).trackingPlan).toBeNull();
    const unbound = await h.as(a.key).get(`/api/v1/write-keys/${latestKey.id}/tracking-plan`);
    expect([unbound.status, unbound.body.code]).toEqual([404, 'tracking_plan_binding_not_found']);
    await h.as(a.key).delete(`/api/v1/tracking-plans/${plan.id}`).expect(204);
    expect((await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}`)).status).toBe(404);
    expect(
      await h.db.dataSource.query('SELECT version FROM tracking_plan_versions WHERE plan_id = $1', [plan.id]),
    ).toEqual([]);
  });

  it('refuses a bad binding with its code and leaves the binding as it was', async () => {
    const plan = await createPlan(a, { name: 'Policies', plan: orderV1 });
    await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
    const key = await writeKey(a);
    const bind = (body: Record<string, unknown>, keyId = key.id, tenant = a) =>
      h.as(tenant.key).put(`/api/v1/write-keys/${keyId}/tracking-plan`).send(body);
    await bind({ planId: plan.id, version: 1, policy: { actions: { wrong_value: 'omit' } } }).expect(200);

    const invalid = await bind({
      planId: plan.id,
      version: 'latest',
      policy: { actions: { unplanned_event: 'omit', spelling: 'allow' }, extra: true },
    });
    expect([invalid.status, invalid.body.code, invalid.body.errors]).toEqual([
      422,
      'invalid_policy',
      [
        { path: '/extra', message: 'is not a policy field' },
        { path: '/actions/unplanned_event', message: 'omit strips a value, and unplanned_event names none' },
        {
          path: '/actions/spelling',
          message:
            'is not a violation class (unplanned_event, unplanned_property, missing_required, wrong_value, common_schema)',
        },
      ],
    ]);
    const strangerIntegration = '5b0c3b8e-1d6f-4d4e-9a53-0d8f1f3c2a11';
    const unknownDestination = await bind({
      planId: plan.id,
      version: 1,
      policy: {
        actions: {},
        destinations: { [strangerIntegration]: { wrong_value: 'quarantine' }, crm: {} },
      },
    });
    expect([unknownDestination.status, unknownDestination.body.errors]).toEqual([
      422,
      [
        {
          path: `/destinations/${strangerIntegration}`,
          message: 'is neither warehouse nor an integration of this account',
        },
        { path: '/destinations/crm', message: 'is neither warehouse nor an integration of this account' },
      ],
    ]);
    const noSuchVersion = await bind({ planId: plan.id, version: 2, policy: { actions: {} } });
    expect([noSuchVersion.status, noSuchVersion.body.code]).toEqual([404, 'tracking_plan_version_not_found']);
    const zero = await bind({ planId: plan.id, version: 0, policy: { actions: {} } });
    expect([zero.status, zero.body.code]).toEqual([400, 'validation_failed']);
    const noPlan = await bind({
      planId: '00000000-0000-4000-8000-000000000000',
      version: 1,
      policy: { actions: {} },
    });
    expect([noPlan.status, noPlan.body.code]).toEqual([404, 'not_found']);

    const bPlan = await createPlan(b, { name: 'B', plan: orderV1 });
    await h.as(b.key).post(`/api/v1/tracking-plans/${bPlan.id}/publish`).expect(201);
    const othersPlan = await bind({ planId: bPlan.id, version: 1, policy: { actions: {} } });
    expect([othersPlan.status, othersPlan.body.code]).toEqual([404, 'not_found']);
    const othersKey = await bind({ planId: bPlan.id, version: 1, policy: { actions: {} } }, key.id, b);
    expect([othersKey.status, othersKey.body.code]).toEqual([404, 'not_found']);
    expect((await h.as(b.key).get(`/api/v1/write-keys/${key.id}/tracking-plan`)).status).toBe(404);
    expect((await h.as(b.key).delete(`/api/v1/write-keys/${key.id}/tracking-plan`)).status).toBe(404);

    await h.as(a.key).delete(`/api/v1/write-keys/${key.id}`).expect(200);
    const revoked = await bind({ planId: plan.id, version: 1, policy: { actions: {} } });
    expect([revoked.status, revoked.body.code]).toEqual([409, 'write_key_revoked']);

    expect((await h.as(a.key).get(`/api/v1/write-keys/${key.id}/tracking-plan`)).body.data).toMatchObject({
      binding: 'pinned',
      version: 1,
      policy: { actions: { wrong_value: 'omit' } },
    });
  });

  it("keeps accounts apart: another account's plan is 404 everywhere", async () => {
    const plan = await createPlan(a, { name: 'Private', plan: orderV1 });
    await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
    const bSame = await createPlan(b, { name: 'Private', plan: orderV2 });
    const asB = h.as(b.key);
    for (const res of [
      await asB.get(`/api/v1/tracking-plans/${plan.id}`),
      await asB.patch(`/api/v1/tracking-plans/${plan.id}`).send({ name: 'Mine' }),
      await asB.put(`/api/v1/tracking-plans/${plan.id}/draft`).send(orderV2),
      await asB.post(`/api/v1/tracking-plans/${plan.id}/publish`),
      await asB.get(`/api/v1/tracking-plans/${plan.id}/versions`),
      await asB.get(`/api/v1/tracking-plans/${plan.id}/versions/1`),
      await asB.get(`/api/v1/tracking-plans/${plan.id}/versions/1/export?format=segment`),
      await asB.put(`/api/v1/tracking-plans/${plan.id}/versions/1`).send({}),
      await asB.get(`/api/v1/tracking-plans/${plan.id}/diff?from=1`),
      await asB.delete(`/api/v1/tracking-plans/${plan.id}`),
    ])
      expect([res.status, res.body.code]).toEqual([404, 'not_found']);
    const listed = (await asB.get('/api/v1/tracking-plans?limit=100')).body.data as { id: string }[];
    expect(listed.map((p) => p.id)).toContain(bSame.id);
    expect(listed.map((p) => p.id)).not.toContain(plan.id);
    const mine = await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}`);
    expect([mine.body.data.name, mine.body.data.draft, mine.body.data.latestVersion]).toEqual([
      'Private',
      orderV1,
      1,
    ]);
    expect((await h.as(a.key).get('/api/v1/tracking-plans/not-a-uuid')).status).toBe(404);
  });

  it('needs tracking_plans.read to read and tracking_plans.write to change', async () => {
    const reader = await a.keyWith(['tracking_plans.read']);
    const plan = await createPlan(a, { name: 'Scoped' });
    expect((await h.as(reader).get(`/api/v1/tracking-plans/${plan.id}`)).status).toBe(200);
    const write = await h.as(reader).post(`/api/v1/tracking-plans/${plan.id}/publish`);
    expect([write.status, write.body.code]).toEqual([403, 'insufficient_scope']);
    const key = await writeKey(a);
    const bind = await h
      .as(reader)
      .put(`/api/v1/write-keys/${key.id}/tracking-plan`)
      .send({ planId: plan.id, version: 'latest', policy: { actions: {} } });
    expect(bind.status).toBe(403);
    const writeKeysOnly = await a.keyWith(['write_keys.read', 'write_keys.write']);
    expect((await h.as(writeKeysOnly).get('/api/v1/tracking-plans')).status).toBe(403);
  });
});

describe('tracking plan caps (real PostgreSQL)', () => {
  it('holds an account to 100 plans by default', async () => {
    expect(defaultTrackingPlanLimits).toEqual({
      plansPerAccount: 100,
      versionsPerPlan: 1_000,
      bytesPerAccount: 64 * 1024 * 1024,
    });
    const defaults = await startHarness('tracking plan default caps');
    try {
      const t = await defaults.tenant();
      for (let i = 0; i < 100; i += 1)
        await defaults
          .as(t.key)
          .post('/api/v1/tracking-plans')
          .send({ name: `Plan ${i}` })
          .expect(201);
      const past = await defaults.as(t.key).post('/api/v1/tracking-plans').send({ name: 'Plan 100' });
      expect([past.status, past.body.code, past.body.limit]).toEqual([
        422,
        'tracking_plan_limit_reached',
        { name: 'tracking_plans', maximum: 100 },
      ]);
    } finally {
      await defaults.close();
    }
  });

  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('tracking plan caps', {
      trackingPlanLimits: { plansPerAccount: 3, versionsPerPlan: 2, bytesPerAccount: 4_000 },
    });
  });
  afterAll(() => h.close());

  const rulesOf = (n: number): TrackingPlan => ({
    rules: Array.from({ length: n }, (_, i) => ({ type: 'track' as const, name: `Event ${i}`, schema: {} })),
  });

  it('refuses the plan past the cap with 422 tracking_plan_limit_reached, and frees a slot on delete', async () => {
    const t = await h.tenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1)
      ids.push(
        (
          await h
            .as(t.key)
            .post('/api/v1/tracking-plans')
            .send({ name: `P${i}` })
            .expect(201)
        ).body.data.id,
      );
    const fourth = await h.as(t.key).post('/api/v1/tracking-plans').send({ name: 'P3' });
    expect([fourth.status, fourth.body.code, fourth.body.limit]).toEqual([
      422,
      'tracking_plan_limit_reached',
      { name: 'tracking_plans', maximum: 3 },
    ]);
    const imported = await h
      .as(t.key)
      .post('/api/v1/tracking-plans/import')
      .send({ format: 'segment', name: 'I', content: { rules: [] } });
    expect([imported.status, imported.body.code]).toEqual([422, 'tracking_plan_limit_reached']);
    // Another account is not counted against this one.
    const other = await h.tenant();
    await h.as(other.key).post('/api/v1/tracking-plans').send({ name: 'Other' }).expect(201);
    await h.as(t.key).delete(`/api/v1/tracking-plans/${ids[0]}`).expect(204);
    await h.as(t.key).post('/api/v1/tracking-plans').send({ name: 'P3' }).expect(201);
  });

  it('refuses the version past the cap with 422 tracking_plan_version_limit_reached', async () => {
    const t = await h.tenant();
    const id = (
      await h
        .as(t.key)
        .post('/api/v1/tracking-plans')
        .send({ name: 'V', plan: rulesOf(1) })
    ).body.data.id as string;
    await h.as(t.key).post(`/api/v1/tracking-plans/${id}/publish`).expect(201);
    await h.as(t.key).put(`/api/v1/tracking-plans/${id}/draft`).send(rulesOf(2)).expect(200);
    await h.as(t.key).post(`/api/v1/tracking-plans/${id}/publish`).expect(201);
    await h.as(t.key).put(`/api/v1/tracking-plans/${id}/draft`).send(rulesOf(3)).expect(200);
    const third = await h.as(t.key).post(`/api/v1/tracking-plans/${id}/publish`);
    expect([third.status, third.body.code, third.body.limit]).toEqual([
      422,
      'tracking_plan_version_limit_reached',
      { name: 'tracking_plan_versions', maximum: 2 },
    ]);
    expect((await h.as(t.key).get(`/api/v1/tracking-plans/${id}/versions`)).body.pagination.total).toBe(2);
  });

  it('refuses a draft or version past the byte cap with 422 tracking_plan_storage_limit_reached', async () => {
    const t = await h.tenant();
    const id = (
      await h
        .as(t.key)
        .post('/api/v1/tracking-plans')
        .send({ name: 'Bytes', plan: rulesOf(20) })
    ).body.data.id as string;
    // 20 rules are 941 bytes, 45 are 2,116, 80 are 3,761: the draft and v1 (1,882) fit in 4,000
    // bytes; an 80-rule draft beside v1 does not, nor a 45-rule draft with its version.
    await h.as(t.key).post(`/api/v1/tracking-plans/${id}/publish`).expect(201);
    const big = await h.as(t.key).put(`/api/v1/tracking-plans/${id}/draft`).send(rulesOf(80));
    expect([big.status, big.body.code, big.body.limit]).toEqual([
      422,
      'tracking_plan_storage_limit_reached',
      { name: 'tracking_plan_bytes', maximum: 4_000 },
    ]);
    await h.as(t.key).put(`/api/v1/tracking-plans/${id}/draft`).send(rulesOf(45)).expect(200);
    const publish = await h.as(t.key).post(`/api/v1/tracking-plans/${id}/publish`);
    expect([publish.status, publish.body.code]).toEqual([422, 'tracking_plan_storage_limit_reached']);
    expect((await h.as(t.key).get(`/api/v1/tracking-plans/${id}`)).body.data.latestVersion).toBe(1);
  });
});
