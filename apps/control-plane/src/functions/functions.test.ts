import { createHash } from 'node:crypto';
import request from 'supertest';
import {
  startHarness,
  TEST_INTERNAL_TOKEN,
  TEST_WAREHOUSE_TOKEN,
  testDeliveryToken,
  type Harness,
  type Tenant,
} from '../testing/harness';

// The functions API against a real control plane and PostgreSQL: drafts, immutable versions,
// bindings to integrations, the warehouse and write keys, what the delivery lookups carry (and
// ingestion's never), isolation between accounts, scopes, and bad input answered with its
// documented code and nothing changed.

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const codeV1 = 'export function transform(event) { return event; }';
const codeV2 = 'export function transform(event) { return { ...event, event: "v2" }; }';
const codeV3 = 'export function transform(event) { return null; } // ünïcödé ✓ 🚀';
const sourceCode = 'export function transform(event) { event.context = { fn: true }; return event; }';

interface FunctionBody {
  id: string;
  name: string;
  kind: string;
  draftCode: string;
  draftCodeHash: string;
  latestVersion: number | null;
  latestVersionId: string | null;
  draftChanged: boolean;
  boundTargets: number;
}
interface VersionBody {
  id: string;
  functionId: string;
  version: number;
  code?: string;
  codeHash: string;
}

describe('functions API (real PostgreSQL)', () => {
  let h: Harness;
  let a: Tenant;
  let b: Tenant;
  let amplitudeIntegration: string;
  let webhookIntegration: string;
  let writeKeyId: string;
  let writeKey: string;

  beforeAll(async () => {
    h = await startHarness('functions');
    a = await h.tenant();
    b = await h.tenant();
    const api = h.as(a.key);
    const app = async (body: object) => (await api.post('/api/v1/apps').send(body)).body.data.id as string;
    const web = await app({ appType: 'web_tracking', displayName: 'Site' });
    const amplitude = await app({
      appType: 'amplitude',
      displayName: 'Amp',
      credentials: { apiKey: 'amplitude-secret-key' },
      config: { region: 'eu' },
    });
    const hook = await app({
      appType: 'webhook',
      displayName: 'Hook',
      credentials: { signingSecret: 'webhook-signing-secret' },
      config: {},
    });
    const integration = async (destinationAppId: string) => {
      const response = await api.post('/api/v1/integrations').send({
        sourceAppId: web,
        destinationAppId,
        dataType: 'events',
        config: { global: {}, tasks: [{ task_type: 'events' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
      });
      expect(response.status).toBe(201);
      return response.body.data.id as string;
    };
    amplitudeIntegration = await integration(amplitude);
    webhookIntegration = await integration(hook);
    const created = (await api.post('/api/v1/write-keys').send({ name: 'site' })).body.data;
    writeKeyId = created.id;
    writeKey = created.key;
  });
  afterAll(() => h.close());

  const create = async (tenant: Tenant, body: Record<string, unknown>) => {
    const res = await h.as(tenant.key).post('/api/v1/functions').send(body);
    expect(res.status).toBe(201);
    return res.body.data as FunctionBody;
  };
  const publish = async (tenant: Tenant, id: string) => {
    const res = await h.as(tenant.key).post(`/api/v1/functions/${id}/versions`);
    expect(res.status).toBe(201);
    return res.body.data as VersionBody;
  };
  const edit = (tenant: Tenant, id: string, body: Record<string, unknown>) =>
    h.as(tenant.key).patch(`/api/v1/functions/${id}`).send(body);
  const lookup = (token: string) =>
    request(h.app)
      .post('/internal/v1/write-keys/lookup')
      .set('Authorization', `Bearer ${token}`)
      .send({ writeKeyId });
  const problem = (res: request.Response) => [res.status, res.body.code];

  it('creates, edits, publishes versions 1, 2, 3 with their code hashes, newest first', async () => {
    const fn = await create(a, { name: 'Scrub', kind: 'destination', code: codeV1, description: 'PII' });
    expect(fn).toMatchObject({
      name: 'Scrub',
      kind: 'destination',
      draftCode: codeV1,
      draftCodeHash: sha256(codeV1),
      latestVersion: null,
      latestVersionId: null,
      draftChanged: true,
      boundTargets: 0,
    });
    const v1 = await publish(a, fn.id);
    expect(v1).toMatchObject({ functionId: fn.id, version: 1, code: codeV1, codeHash: sha256(codeV1) });
    // An unchanged draft has nothing new to publish.
    expect(problem(await h.as(a.key).post(`/api/v1/functions/${fn.id}/versions`))).toEqual([
      409,
      'draft_unchanged',
    ]);
    expect((await edit(a, fn.id, { code: codeV2 })).body.data).toMatchObject({
      draftCode: codeV2,
      draftCodeHash: sha256(codeV2),
      latestVersion: 1,
      latestVersionId: v1.id,
      draftChanged: true,
    });
    const v2 = await publish(a, fn.id);
    await edit(a, fn.id, { code: codeV3, name: 'Scrub PII', description: '' });
    const v3 = await publish(a, fn.id);
    expect([v2.version, v2.codeHash, v3.version, v3.codeHash]).toEqual([
      2,
      sha256(codeV2),
      3,
      sha256(codeV3),
    ]);

    const list = await h.as(a.key).get(`/api/v1/functions/${fn.id}/versions`);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual(
      [v3, v2, v1].map(({ id, version, codeHash, createdAt }: VersionBody & { createdAt?: string }) => ({
        id,
        functionId: fn.id,
        version,
        codeHash,
        createdAt,
      })),
    );
    expect(list.body.pagination).toEqual({ total: 3, limit: 20, offset: 0, nextOffset: null });
    const page = await h.as(a.key).get(`/api/v1/functions/${fn.id}/versions?limit=1&offset=1`);
    expect([page.body.data.map((v: VersionBody) => v.version), page.body.pagination.nextOffset]).toEqual([
      [2],
      2,
    ]);

    const got = await h.as(a.key).get(`/api/v1/functions/${fn.id}`);
    expect(got.body.data).toMatchObject({
      name: 'Scrub PII',
      description: '',
      draftCode: codeV3,
      latestVersion: 3,
      latestVersionId: v3.id,
      draftChanged: false,
    });
    const all = await h.as(a.key).get('/api/v1/functions');
    expect(all.body.data.map((f: FunctionBody) => [f.id, f.latestVersion])).toContainEqual([fn.id, 3]);
    expect(all.body.data[0]).not.toHaveProperty('draftCode');
  });

  it('never changes a published version when the draft is edited', async () => {
    const fn = await create(a, { name: 'Immutable', kind: 'destination', code: codeV1 });
    const v1 = await publish(a, fn.id);
    await edit(a, fn.id, { code: codeV2 }).expect(200);
    const read = await h.as(a.key).get(`/api/v1/functions/${fn.id}/versions/${v1.id}`);
    expect(read.body.data).toEqual({ ...v1, code: codeV1, codeHash: sha256(codeV1) });
    // Nor can anything else change it: the table refuses updates.
    await expect(
      h.db.dataSource.query("UPDATE function_versions SET code = 'x' WHERE id = $1", [v1.id]),
    ).rejects.toThrow('function_versions are immutable');
    expect((await h.as(a.key).get(`/api/v1/functions/${fn.id}`)).body.data.draftCode).toBe(codeV2);
  });

  it('binds, rolls back and unbinds an integration; lookup carries that integration’s code only', async () => {
    const fn = await create(a, { name: 'Amp shaper', kind: 'destination', code: codeV1 });
    const v1 = await publish(a, fn.id);
    await edit(a, fn.id, { code: codeV2 }).expect(200);
    const v2 = await publish(a, fn.id);
    const path = `/api/v1/integrations/${amplitudeIntegration}/function`;

    expect(problem(await h.as(a.key).get(path))).toEqual([404, 'function_binding_not_found']);
    const bound = await h.as(a.key).put(path).send({ functionVersionId: v2.id });
    expect(bound.status).toBe(200);
    expect(bound.body.data).toMatchObject({
      targetType: 'integration',
      targetId: amplitudeIntegration,
      functionId: fn.id,
      functionVersionId: v2.id,
      version: 2,
      codeHash: sha256(codeV2),
    });
    expect((await h.as(a.key).get(path)).body.data).toEqual(bound.body.data);

    const amplitude = await lookup(testDeliveryToken('amplitude'));
    expect(amplitude.status).toBe(200);
    expect(amplitude.body.data.destinations).toEqual([
      expect.objectContaining({
        integrationId: amplitudeIntegration,
        function: { functionId: fn.id, versionId: v2.id, version: 2, code: codeV2 },
      }),
    ]);
    expect(amplitude.body.data).not.toHaveProperty('warehouseFunction');
    const webhook = await lookup(testDeliveryToken('webhook'));
    expect(webhook.body.data.destinations).toEqual([
      expect.objectContaining({ integrationId: webhookIntegration, function: null }),
    ]);
    expect(webhook.text).not.toContain(codeV2.slice(0, 40));

    // Publishing changes nothing bound; binding v1 again is the rollback.
    await edit(a, fn.id, { code: codeV3 }).expect(200);
    await publish(a, fn.id);
    expect((await lookup(testDeliveryToken('amplitude'))).body.data.destinations[0].function.versionId).toBe(
      v2.id,
    );
    const rolledBack = await h.as(a.key).put(path).send({ functionVersionId: v1.id });
    expect(rolledBack.body.data).toMatchObject({
      functionVersionId: v1.id,
      version: 1,
      codeHash: sha256(codeV1),
    });
    expect((await lookup(testDeliveryToken('amplitude'))).body.data.destinations[0].function).toEqual({
      functionId: fn.id,
      versionId: v1.id,
      version: 1,
      code: codeV1,
    });
    expect((await h.as(a.key).get(`/api/v1/functions/${fn.id}`)).body.data.boundTargets).toBe(1);

    // Bound: not deleted.
    expect(problem(await h.as(a.key).delete(`/api/v1/functions/${fn.id}`))).toEqual([409, 'function_bound']);
    await h.as(a.key).delete(path).expect(204);
    await h.as(a.key).delete(path).expect(204);
    expect(problem(await h.as(a.key).get(path))).toEqual([404, 'function_binding_not_found']);
    expect((await lookup(testDeliveryToken('amplitude'))).body.data.destinations[0].function).toBeNull();
    await h.as(a.key).delete(`/api/v1/functions/${fn.id}`).expect(204);
    expect(problem(await h.as(a.key).get(`/api/v1/functions/${fn.id}`))).toEqual([404, 'not_found']);
    // Its name is free again; its versions bind no more.
    await create(a, { name: 'Amp shaper', kind: 'destination', code: codeV1 });
    expect(problem(await h.as(a.key).put(path).send({ functionVersionId: v1.id }))).toEqual([
      404,
      'function_version_not_found',
    ]);
  });

  it('binds the warehouse: its resolution carries it; the warehouse token opens no tenant lookup', async () => {
    const fn = await create(a, { name: 'Warehouse scrub', kind: 'destination', code: codeV3 });
    const v1 = await publish(a, fn.id);
    expect(problem(await h.as(a.key).get('/api/v1/warehouse/function'))).toEqual([
      404,
      'function_binding_not_found',
    ]);
    const bound = await h.as(a.key).put('/api/v1/warehouse/function').send({ functionVersionId: v1.id });
    expect(bound.status).toBe(200);
    expect(bound.body.data).toMatchObject({
      targetType: 'warehouse',
      targetId: null,
      functionVersionId: v1.id,
    });

    // The warehouse consumer reads it with the account's placement, from its own endpoint; its
    // token opens no tenant lookup (where credentials are).
    const warehouseLookup = await lookup(TEST_WAREHOUSE_TOKEN);
    expect(problem(warehouseLookup)).toEqual([401, 'invalid_service_token']);
    expect(warehouseLookup.text).not.toContain('amplitude-secret-key');
    const resolveWarehouse = () =>
      request(h.app)
        .post('/internal/v1/warehouses/resolve')
        .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
        .send({ accountId: a.accountId });
    const placed = await resolveWarehouse();
    expect([placed.status, placed.body.data.function]).toEqual([
      200,
      { functionId: fn.id, versionId: v1.id, version: 1, code: codeV3 },
    ]);
    expect(
      (
        await request(h.app)
          .post('/internal/v1/warehouses/resolve')
          .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
          .send({ accountId: b.accountId })
      ).body.data.function,
    ).toBeNull();
    expect((await lookup(testDeliveryToken('amplitude'))).text).not.toContain(codeV3);

    // Ingestion's record never carries tenant code, whatever is bound.
    const resolved = await request(h.app)
      .post('/internal/v1/write-keys/resolve')
      .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
      .send({ writeKey });
    expect(resolved.status).toBe(200);
    expect(resolved.body.data).not.toHaveProperty('sourceFunction');
    expect(resolved.text).not.toContain('transform');
    expect(JSON.stringify(resolved.body.data.destinations)).not.toContain('function');

    await h.as(a.key).delete('/api/v1/warehouse/function').expect(204);
    expect((await resolveWarehouse()).body.data.function).toBeNull();
  });

  it('binds a source function to a write key only, and a destination function never to one', async () => {
    const source = await create(a, { name: 'Enrich', kind: 'source', code: sourceCode });
    const sv1 = await publish(a, source.id);
    const destination = await create(a, { name: 'Shaper', kind: 'destination', code: codeV1 });
    const dv1 = await publish(a, destination.id);
    const keyPath = `/api/v1/write-keys/${writeKeyId}/function`;

    const bound = await h.as(a.key).put(keyPath).send({ functionVersionId: sv1.id });
    expect(bound.status).toBe(200);
    expect(bound.body.data).toMatchObject({ targetType: 'write_key', targetId: writeKeyId, version: 1 });
    expect((await h.as(a.key).get(keyPath)).body.data.functionVersionId).toBe(sv1.id);

    expect(problem(await h.as(a.key).put(keyPath).send({ functionVersionId: dv1.id }))).toEqual([
      422,
      'function_kind_mismatch',
    ]);
    expect(
      problem(
        await h
          .as(a.key)
          .put(`/api/v1/integrations/${webhookIntegration}/function`)
          .send({ functionVersionId: sv1.id }),
      ),
    ).toEqual([422, 'function_kind_mismatch']);
    expect(
      problem(await h.as(a.key).put('/api/v1/warehouse/function').send({ functionVersionId: sv1.id })),
    ).toEqual([422, 'function_kind_mismatch']);
    // Nothing changed by the refusals.
    expect((await h.as(a.key).get(keyPath)).body.data.functionVersionId).toBe(sv1.id);
    expect(problem(await h.as(a.key).get(`/api/v1/integrations/${webhookIntegration}/function`))).toEqual([
      404,
      'function_binding_not_found',
    ]);
    expect(problem(await h.as(a.key).delete(`/api/v1/functions/${source.id}`))).toEqual([
      409,
      'function_bound',
    ]);
    await h.as(a.key).delete(keyPath).expect(204);
    await h.as(a.key).delete(`/api/v1/functions/${source.id}`).expect(204);
  });

  it("answers another account's function, version and targets 404, and changes nothing of them", async () => {
    const theirs = await create(b, { name: 'Theirs', kind: 'destination', code: codeV1 });
    const theirVersion = await publish(b, theirs.id);
    expect(problem(await h.as(a.key).get(`/api/v1/functions/${theirs.id}`))).toEqual([404, 'not_found']);
    expect(problem(await edit(a, theirs.id, { code: codeV2 }))).toEqual([404, 'not_found']);
    expect(problem(await h.as(a.key).post(`/api/v1/functions/${theirs.id}/versions`))).toEqual([
      404,
      'not_found',
    ]);
    expect(problem(await h.as(a.key).delete(`/api/v1/functions/${theirs.id}`))).toEqual([404, 'not_found']);
    expect(
      problem(await h.as(a.key).get(`/api/v1/functions/${theirs.id}/versions/${theirVersion.id}`)),
    ).toEqual([404, 'not_found']);
    expect(
      problem(
        await h
          .as(a.key)
          .put(`/api/v1/integrations/${amplitudeIntegration}/function`)
          .send({ functionVersionId: theirVersion.id }),
      ),
    ).toEqual([404, 'function_version_not_found']);
    expect(
      problem(
        await h.as(b.key).put(`/api/v1/integrations/${amplitudeIntegration}/function`).send({
          functionVersionId: theirVersion.id,
        }),
      ),
    ).toEqual([404, 'not_found']);
    expect(problem(await h.as(b.key).get(`/api/v1/write-keys/${writeKeyId}/function`))).toEqual([
      404,
      'not_found',
    ]);
    expect(
      (await h.as(a.key).get('/api/v1/functions')).body.data.map((f: FunctionBody) => f.id),
    ).not.toContain(theirs.id);
    expect((await h.as(b.key).get(`/api/v1/functions/${theirs.id}`)).body.data).toMatchObject({
      draftCode: codeV1,
      latestVersion: 1,
    });
  });

  it('refuses keys without the scopes with 403 insufficient_scope', async () => {
    const fn = await create(a, { name: 'Scoped', kind: 'destination', code: codeV1 });
    const v1 = await publish(a, fn.id);
    const readOnly = await a.keyWith(['functions.read']);
    const functionsOnly = await a.keyWith(['functions.read', 'functions.write']);
    const integrationsOnly = await a.keyWith(['integrations.read', 'integrations.write']);
    expect((await h.as(readOnly).get(`/api/v1/functions/${fn.id}`)).status).toBe(200);
    expect(
      problem(await h.as(readOnly).post('/api/v1/functions').send({ name: 'x', kind: 'source', code: 'x' })),
    ).toEqual([403, 'insufficient_scope']);
    expect(problem(await h.as(readOnly).post(`/api/v1/functions/${fn.id}/versions`))).toEqual([
      403,
      'insufficient_scope',
    ]);
    expect(problem(await h.as(integrationsOnly).get('/api/v1/functions'))).toEqual([
      403,
      'insufficient_scope',
    ]);
    const path = `/api/v1/integrations/${amplitudeIntegration}/function`;
    expect(problem(await h.as(functionsOnly).put(path).send({ functionVersionId: v1.id }))).toEqual([
      403,
      'insufficient_scope',
    ]);
    expect(problem(await h.as(integrationsOnly).put(path).send({ functionVersionId: v1.id }))).toEqual([
      403,
      'insufficient_scope',
    ]);
    expect(
      problem(await h.as(functionsOnly).put('/api/v1/warehouse/function').send({ functionVersionId: v1.id })),
    ).toEqual([403, 'insufficient_scope']);
    expect(
      problem(
        await h.as(functionsOnly).post(`/api/v1/functions/${fn.id}/test`).send({ writeKeyId, limit: 5 }),
      ),
    ).toEqual([403, 'insufficient_scope']);
    expect(problem(await h.as(a.key).get(path))).toEqual([404, 'function_binding_not_found']);
  });

  it('refuses bad input with validation_failed and stores nothing', async () => {
    const before = (await h.as(a.key).get('/api/v1/functions')).body.pagination.total as number;
    const tooLarge = `// ${'x'.repeat(64 * 1024)}`;
    const large = await h
      .as(a.key)
      .post('/api/v1/functions')
      .send({ name: 'Big', kind: 'destination', code: tooLarge });
    expect([large.status, large.body.code, large.body.errors]).toEqual([
      400,
      'validation_failed',
      [{ path: 'body.code', message: 'must be at most 65536 bytes of UTF-8' }],
    ]);
    // 64 KiB exactly is taken: 21,845 three-byte characters and one byte more.
    const atLimit = `${'€'.repeat(21_845)}x`;
    expect(Buffer.byteLength(atLimit)).toBe(65_536);
    const fits = await create(a, { name: 'At the limit', kind: 'destination', code: atLimit });
    expect(problem(await edit(a, fits.id, { code: `${atLimit}y` }))).toEqual([400, 'validation_failed']);
    expect(
      problem(await h.as(a.key).post('/api/v1/functions').send({ name: 'K', kind: 'both', code: 'x' })),
    ).toEqual([400, 'validation_failed']);
    expect(
      problem(await h.as(a.key).post('/api/v1/functions').send({ name: ' ', kind: 'source', code: 'x' })),
    ).toEqual([400, 'validation_failed']);
    expect(
      problem(
        await h.as(a.key).post('/api/v1/functions').send({ name: 'Nul', kind: 'source', code: 'a\u0000b' }),
      ),
    ).toEqual([400, 'validation_failed']);
    expect(
      problem(
        await h.as(a.key).post('/api/v1/functions').send({ name: 'At the limit', kind: 'source', code: 'x' }),
      ),
    ).toEqual([409, 'function_name_taken']);
    expect(
      problem(
        await h
          .as(a.key)
          .put(`/api/v1/integrations/${amplitudeIntegration}/function`)
          .send({ functionVersionId: 'v1' }),
      ),
    ).toEqual([404, 'function_version_not_found']);
    expect(
      problem(await h.as(a.key).put(`/api/v1/integrations/${amplitudeIntegration}/function`).send({})),
    ).toEqual([400, 'validation_failed']);
    expect((await h.as(a.key).get('/api/v1/functions')).body.pagination.total).toBe(before + 1);
    expect((await h.as(a.key).get(`/api/v1/functions/${fits.id}`)).body.data.draftCode).toBe(atLimit);
  });
});
