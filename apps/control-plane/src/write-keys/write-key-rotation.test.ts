import request from 'supertest';
import { hashToken } from '../auth/secret-token';
import { startHarness, TEST_INTERNAL_TOKEN, type Harness, type Tenant } from '../testing/harness';
import { WriteKeyEntity } from './write-key.entity';

// POST /api/v1/write-keys/{id}/rotate on real PostgreSQL, checked through ingestion's own
// resolution endpoint. That ingestion's caches drop the old secret at once is tested with
// real Redis in apps/ingestion/src/auth/revocation.test.ts.
describe('rotating a write key (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;

  beforeAll(async () => {
    h = await startHarness('write key rotation');
    t = await h.tenant();
  });
  afterAll(() => h.close());

  const resolve = (writeKey: string) =>
    request(h.app)
      .post('/internal/v1/write-keys/resolve')
      .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
      .send({ writeKey });

  const created = async (body: Record<string, unknown> = { name: 'Site' }) =>
    (await h.as(t.key).post('/api/v1/write-keys').send(body)).body.data as {
      id: string;
      key: string;
      createdAt: string;
    };

  it('answers a new key once; the old one resolves no more; id and settings stay', async () => {
    const before = await created({
      name: 'Shop',
      allowedOrigins: ['shop.example.com'],
      rateLimits: { eventsPerSecond: 7, eventsPerDay: 700 },
    });
    expect((await resolve(before.key)).body.data).toMatchObject({ writeKeyId: before.id, status: 'active' });

    const rotated = await h.as(t.key).post(`/api/v1/write-keys/${before.id}/rotate`);
    expect(rotated.status).toBe(200);
    const after = rotated.body.data;
    expect(after.key).toMatch(/^wk_[A-Za-z0-9_-]{43}$/);
    expect(after.key).not.toBe(before.key);
    expect(after).toMatchObject({
      id: before.id,
      name: 'Shop',
      state: 'active',
      allowedOrigins: ['shop.example.com'],
      rateLimits: { eventsPerSecond: 7, eventsPerDay: 700 },
      keyPrefix: after.key.slice(0, 9),
      maskedKey: `${after.key.slice(0, 9)}…`,
      createdAt: before.createdAt,
      revokedAt: null,
    });

    expect((await resolve(before.key)).body).toMatchObject({ status: 404, code: 'write_key_not_found' });
    expect((await resolve(after.key)).body.data).toMatchObject({
      writeKeyId: before.id,
      accountId: t.accountId,
      status: 'active',
      allowedOrigins: ['shop.example.com'],
    });
    const row = await h.db.dataSource.getRepository(WriteKeyEntity).findOneByOrFail({ id: before.id });
    expect(row.keyHash).toBe(hashToken(after.key));
    // Shown once: reading the key afterwards never carries it.
    const read = await h.as(t.key).get(`/api/v1/write-keys/${before.id}`);
    expect(JSON.stringify(read.body)).not.toContain(after.key);
    expect(read.body.data.keyPrefix).toBe(after.key.slice(0, 9));
  });

  it('rotates again: each rotation retires the previous secret', async () => {
    const first = await created();
    const second = (await h.as(t.key).post(`/api/v1/write-keys/${first.id}/rotate`)).body.data.key as string;
    const third = (await h.as(t.key).post(`/api/v1/write-keys/${first.id}/rotate`)).body.data.key as string;
    const statuses = await Promise.all(
      [first.key, second, third].map(async (k) => (await resolve(k)).status),
    );
    expect(statuses).toEqual([404, 404, 200]);
  });

  it('of two rotations at once, one wins and the other answers 409 write_key_rotated, never two live keys', async () => {
    const key = await created();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => h.as(t.key).post(`/api/v1/write-keys/${key.id}/rotate`)),
    );
    const won = answers.filter((a) => a.status === 200);
    const lost = answers.filter((a) => a.status !== 200);
    expect(won.length).toBeGreaterThanOrEqual(1);
    expect(lost.every((a) => a.status === 409 && a.body.code === 'write_key_rotated')).toBe(true);
    const live = await Promise.all(won.map(async (a) => (await resolve(a.body.data.key as string)).status));
    // Only the last write holds: exactly one of the answered keys works.
    expect(live.filter((s) => s === 200)).toHaveLength(1);
  });

  it('refuses a body with any field, rotating nothing', async () => {
    const key = await created();
    const answer = await h.as(t.key).post(`/api/v1/write-keys/${key.id}/rotate`).send({ name: 'renamed' });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('validation_failed');
    // Named where the client put it, as every other body's fields are.
    expect(answer.body.errors).toEqual([
      { path: 'body.name', message: '"name" is an excess property and therefore is not allowed' },
    ]);
    expect((await resolve(key.key)).status).toBe(200);
    const empty = await h.as(t.key).post(`/api/v1/write-keys/${key.id}/rotate`).send({});
    expect(empty.status).toBe(200);
  });

  it('answers 409 write_key_revoked for a revoked key', async () => {
    const key = await created();
    await h.as(t.key).delete(`/api/v1/write-keys/${key.id}`);
    const answer = await h.as(t.key).post(`/api/v1/write-keys/${key.id}/rotate`);
    expect(answer.status).toBe(409);
    expect(answer.body.code).toBe('write_key_revoked');
    expect(JSON.stringify(answer.body)).not.toMatch(/wk_[A-Za-z0-9_-]{43}/);
  });

  it('needs write_keys.write; another account and unknown ids are 404', async () => {
    const key = await created();
    const readOnly = await t.keyWith(['write_keys.read']);
    const refused = await h.as(readOnly).post(`/api/v1/write-keys/${key.id}/rotate`);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('insufficient_scope');
    const other = await h.tenant();
    expect((await h.as(other.key).post(`/api/v1/write-keys/${key.id}/rotate`)).status).toBe(404);
    expect(
      (await h.as(t.key).post('/api/v1/write-keys/00000000-0000-4000-8000-000000000000/rotate')).status,
    ).toBe(404);
    expect((await h.as(t.key).post('/api/v1/write-keys/not-a-uuid/rotate')).status).toBe(404);
    // The key still works: nothing was rotated by the refused calls.
    expect((await resolve(key.key)).status).toBe(200);
  });
});
