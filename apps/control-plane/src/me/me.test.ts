import request from 'supertest';
import { hashToken } from '../auth/secret-token';
import { scopes } from '../auth/scopes';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

describe('GET /api/v1/me (real PostgreSQL)', () => {
  let h: Harness;
  let a: Tenant;
  let b: Tenant;

  beforeAll(async () => {
    h = await startHarness('me');
    a = await h.tenant(['automations']);
    b = await h.tenant();
  });
  afterAll(() => h.close());

  it("answers a read-only key's scopes, its id, name and prefix, and its account's features", async () => {
    const key = await a.keyWith(['apps.read', 'usage.read']);
    const answer = await h.as(key).get('/api/v1/me');
    expect(answer.status).toBe(200);
    const [row] = (await h.db.dataSource.query(
      'SELECT id, name, key_prefix, created_at FROM api_keys WHERE account_id = $1 ORDER BY created_at DESC LIMIT 1',
      [a.accountId],
    )) as { id: string; name: string; key_prefix: string; created_at: Date }[];
    expect(answer.body).toEqual({
      data: {
        key: {
          id: row!.id,
          name: 'test',
          keyPrefix: row!.key_prefix,
          createdAt: row!.created_at.toISOString(),
        },
        scopes: ['apps.read', 'usage.read'],
        account: { id: a.accountId, name: expect.stringMatching(/^Tenant \d+$/), features: ['automations'] },
      },
    });
    expect(key.startsWith(row!.key_prefix)).toBe(true);
  });

  it('never carries the secret or its hash', async () => {
    const answer = await h.as(a.key).get('/api/v1/me');
    const text = JSON.stringify(answer.body);
    expect(text).not.toContain(a.key);
    const [{ key_hash: hash }] = (await h.db.dataSource.query(
      'SELECT key_hash FROM api_keys WHERE account_id = $1',
      [a.accountId],
    )) as { key_hash: string }[];
    expect(text).not.toContain(hash);
    expect(Object.keys(answer.body.data.key).sort()).toEqual(['createdAt', 'id', 'keyPrefix', 'name']);
  });

  it('answers each account its own: another account, no features', async () => {
    const answer = await h.as(b.key).get('/api/v1/me');
    expect(answer.status).toBe(200);
    expect(answer.body.data.account).toMatchObject({ id: b.accountId, features: [] });
    expect(answer.body.data.scopes).toEqual([...scopes]);
  });

  it('answers 401 without a key and for an unknown key', async () => {
    const none = await request(h.app).get('/api/v1/me');
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('unauthenticated');
    const unknown = await h.as('plk_not_a_key_at_all_0000000000000000000000000').get('/api/v1/me');
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('invalid_api_key');
  });

  it('answers 401 for a revoked key', async () => {
    const key = await a.keyWith(['apps.read']);
    expect((await h.as(key).get('/api/v1/me')).status).toBe(200);
    await h.db.dataSource.query('UPDATE api_keys SET revoked_at = now() WHERE key_hash = $1', [
      hashToken(key),
    ]);
    const me = await h.as(key).get('/api/v1/me');
    expect(me.status).toBe(401);
    expect(me.body.code).toBe('invalid_api_key');
  });
});
