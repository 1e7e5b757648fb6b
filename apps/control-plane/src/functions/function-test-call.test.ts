import { startHarness, type Harness, type Tenant } from '../testing/harness';

// The test call's input checks, which come before any runtime: each refusal is answered with
// its documented code, and a control plane without a runtime answers 503, never a fake result.

describe('the functions test call without a runtime (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let functionId: string;

  beforeAll(async () => {
    h = await startHarness('function test call');
    t = await h.tenant();
    functionId = (
      await h
        .as(t.key)
        .post('/api/v1/functions')
        .send({ name: 'Echo', kind: 'destination', code: 'export const transform = (e) => e;' })
        .expect(201)
    ).body.data.id as string;
  });
  afterAll(() => h.close());

  const test = (body: object, id = functionId) => h.as(t.key).post(`/api/v1/functions/${id}/test`).send(body);
  const refusal = async (body: object) => {
    const res = await test(body);
    return [res.status, res.body.code, res.body.errors?.[0]?.path];
  };

  it('refuses what is not one code source and one event source, naming the field', async () => {
    expect(await refusal({})).toEqual([400, 'validation_failed', 'body.events']);
    expect(await refusal({ events: [{}], writeKeyId: 'x' })).toEqual([
      400,
      'validation_failed',
      'body.events',
    ]);
    expect(await refusal({ events: [] })).toEqual([400, 'validation_failed', 'body.events']);
    expect(await refusal({ events: Array.from({ length: 101 }, () => ({ type: 'track' })) })).toEqual([
      400,
      'validation_failed',
      'body.events',
    ]);
    expect((await refusal({ events: [{}], code: 'x', versionId: 'y' }))[0]).toBe(400);
    expect((await refusal({ writeKeyId: 'x', limit: 51 }))[0]).toBe(400);
    expect(await refusal({ events: [{}], limit: 5 })).toEqual([400, 'validation_failed', 'body.limit']);
    expect(await refusal({ events: [{}], code: ' ' })).toEqual([400, 'validation_failed', 'body.code']);
  });

  it('answers 404 for an unknown function or version, and 503 with no runtime to run on', async () => {
    const unknown = await test({ events: [{}] }, '00000000-0000-4000-8000-000000000000');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'not_found']);
    const version = await test({ events: [{}], versionId: '00000000-0000-4000-8000-000000000000' });
    expect([version.status, version.body.code]).toEqual([404, 'function_version_not_found']);
    const unavailable = await test({ events: [{ type: 'track', event: 'A' }] });
    expect([unavailable.status, unavailable.body.code]).toEqual([503, 'function_runtime_unavailable']);
  });
});
