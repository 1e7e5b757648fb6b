import { PassThrough } from 'node:stream';
import { createIsolatedVmRuntime, derivedMessageId, type FunctionRuntime } from '@pipeline/functions';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, debuggerKeys, type RedisClient } from '@pipeline/redis';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const quiet = createLogger({ service: 'function-test-call-test', stream: new PassThrough() });

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

// The test call on the real isolated-vm runtime (a sandbox child process, no fake): what the
// function returned, dropped or threw per event, after delivery's own checks, with its logs and
// CPU time; the draft, pasted code or a published version; pasted events or the debugger's.
describe('the functions test call on the isolated-vm runtime (real PostgreSQL, Redis)', () => {
  let h: Harness;
  let t: Tenant;
  let redis: RedisClient;
  let runtime: FunctionRuntime;
  let writeKeyId: string;

  const shaper = `export function transform(event, ctx) {
  console.log('seen', event.event, ctx.kind, ctx.destination);
  if (event.event === 'Drop') return null;
  if (event.event === 'Boom') throw new Error('boom on ' + event.messageId);
  if (event.event === 'Split') return [{ ...event, event: 'A' }, { ...event, event: 'B' }];
  return { ...event, properties: { ...event.properties, scrubbed: true, email: undefined } };
}`;
  const track = (event: string, properties: Record<string, unknown> = {}) => ({
    type: 'track',
    event,
    messageId: `m-${event}`,
    anonymousId: 'anon-1',
    timestamp: '2026-11-30T01:00:00.000Z',
    properties,
  });

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger: quiet });
    await redis.connect();
    runtime = createIsolatedVmRuntime();
    h = await startHarness('function test runtime', {
      functionRuntime: runtime,
      debugger: { redis, connection: { REDIS_URL } },
    });
    t = await h.tenant();
    writeKeyId = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data.id as string;
  });
  afterAll(async () => {
    await redis.del(debuggerKeys.events(writeKeyId));
    await runtime.close();
    await h.close();
    await closeRedis(redis);
  });

  const createFunction = async (name: string, code: string) =>
    (await h.as(t.key).post('/api/v1/functions').send({ name, kind: 'destination', code }).expect(201)).body
      .data.id as string;

  it('answers per event ok, dropped, split and error, with logs and CPU time, delivering nothing', async () => {
    const id = await createFunction('Shaper', shaper);
    const events = [
      track('Order Completed', { total: 12, email: 'a@example.com' }),
      track('Drop'),
      track('Split'),
      track('Boom'),
    ];
    const res = await h
      .as(t.key)
      .post(`/api/v1/functions/${id}/test`)
      .send({ events, destination: 'amplitude' });
    expect(res.status).toBe(200);
    const { data } = res.body;
    expect([data.runtime, data.versionId, data.outcome]).toEqual(['isolated-vm', null, 'completed']);
    expect(data.results.map((r: { input: unknown; result: string }) => [r.input, r.result])).toEqual([
      [events[0], 'ok'],
      [events[1], 'dropped'],
      [events[2], 'ok'],
      [events[3], 'error'],
    ]);
    expect(data.results[0].events).toEqual([{ ...events[0], properties: { total: 12, scrubbed: true } }]);
    // A split's events get ids derived from the input's, so a redelivery makes the same ones.
    expect(
      data.results[2].events.map((e: { event: string; messageId: string }) => [e.event, e.messageId]),
    ).toEqual([
      ['A', derivedMessageId('m-Split', 0)],
      ['B', derivedMessageId('m-Split', 1)],
    ]);
    expect(data.results[3].error).toEqual({
      code: 'function_error',
      message: expect.stringContaining('boom on m-Boom'),
    });
    expect(data.logs).toEqual(
      ['Order Completed', 'Drop', 'Split', 'Boom'].map((name, event) => ({
        event,
        level: 'log',
        message: `seen ${name} destination amplitude`,
      })),
    );
    expect(data.logsDropped).toBe(0);
    expect(data.cpuMicros).toBeGreaterThan(0);
  });

  it('runs a published version, pasted code or the draft, as asked', async () => {
    const id = await createFunction('Versions', 'export const transform = (e) => ({ ...e, event: "v1" });');
    const v1 = (await h.as(t.key).post(`/api/v1/functions/${id}/versions`).expect(201)).body.data
      .id as string;
    await h
      .as(t.key)
      .patch(`/api/v1/functions/${id}`)
      .send({ code: 'export const transform = (e) => ({ ...e, event: "draft" });' })
      .expect(200);
    const nameFrom = async (body: object) => {
      const res = await h
        .as(t.key)
        .post(`/api/v1/functions/${id}/test`)
        .send({ events: [track('In')], ...body });
      expect(res.status).toBe(200);
      return [res.body.data.versionId, res.body.data.results[0].events[0].event];
    };
    expect(await nameFrom({ versionId: v1 })).toEqual([v1, 'v1']);
    expect(await nameFrom({})).toEqual([null, 'draft']);
    expect(
      await nameFrom({ code: 'export function transform(e) { return { ...e, event: "pasted" }; }' }),
    ).toEqual([null, 'pasted']);
    // Nothing of that was saved.
    expect((await h.as(t.key).get(`/api/v1/functions/${id}`)).body.data.draftCode).toContain('"draft"');
  });

  it("runs on the debugger's newest accepted events of a write key, oldest first", async () => {
    const id = await createFunction('Echo', 'export const transform = (e) => e;');
    const add = (status: 'accepted' | 'rejected', payload: Record<string, unknown>) =>
      redis.xadd(
        debuggerKeys.events(writeKeyId),
        '*',
        'd',
        JSON.stringify({
          receivedAt: new Date().toISOString(),
          requestId: 'r-1',
          status,
          type: 'track',
          event: payload.event,
          messageId: payload.messageId,
          errors: [],
          payload,
        }),
      );
    await add('accepted', track('First'));
    await add('accepted', track('Second'));
    await add('rejected', { type: 'track' });
    await add('accepted', track('Third'));
    const res = await h.as(t.key).post(`/api/v1/functions/${id}/test`).send({ writeKeyId, limit: 2 });
    expect(res.status).toBe(200);
    expect(
      res.body.data.results.map((r: { input: { event: string }; result: string }) => [
        r.input.event,
        r.result,
      ]),
    ).toEqual([
      ['Second', 'ok'],
      ['Third', 'ok'],
    ]);
    const unknownKey = await h
      .as(t.key)
      .post(`/api/v1/functions/${id}/test`)
      .send({ writeKeyId: '00000000-0000-4000-8000-000000000000' });
    expect([unknownKey.status, unknownKey.body.code]).toEqual([404, 'not_found']);
  });

  it('fails every event of a batch that runs past its CPU budget with function_timeout', async () => {
    const id = await createFunction('Loop', 'export function transform(e) { for (;;) {} }');
    const res = await h
      .as(t.key)
      .post(`/api/v1/functions/${id}/test`)
      .send({ events: [track('One'), track('Two')] });
    expect(res.status).toBe(200);
    expect(res.body.data.outcome).toBe('failed');
    expect(
      res.body.data.results.map((r: { result: string; error: { code: string } }) => [r.result, r.error.code]),
    ).toEqual([
      ['error', 'function_timeout'],
      ['error', 'function_timeout'],
    ]);
  });
});
