import request from 'supertest';
import { startHarness, type Harness } from '../testing/harness';
import { runOperatorCli } from './operator-cli';
import { scopes as allScopes } from '../auth/scopes';

describe('operator CLI (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('operator cli');
  });
  afterAll(() => h.close());

  async function cli(...argv: string[]) {
    let out = '';
    let err = '';
    const code = await runOperatorCli(argv, h.db.dataSource, {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err, json: () => JSON.parse(out) };
  }

  it('takes a new user from nothing to a working API key and write key', async () => {
    const account = (
      await cli('accounts', 'create', '--name', 'Acme', '--features', 'automations', '--json')
    ).json();
    expect(account).toMatchObject({ id: expect.any(String), name: 'Acme', features: ['automations'] });

    const key = await cli(
      'api-keys',
      'create',
      '--account',
      account.id,
      '--scopes',
      'all',
      '--name',
      'ops',
      '--json',
    );
    expect(key.code).toBe(0);
    const { apiKey, scopes } = key.json();
    expect(apiKey).toMatch(/^plk_/);
    expect(scopes).toEqual([...allScopes]);
    const apps = await request(h.app).get('/api/v1/apps').set('Authorization', `Bearer ${apiKey}`);
    expect(apps.status).toBe(200);

    const write = (
      await cli(
        'write-keys',
        'create',
        '--account',
        account.id,
        '--name',
        'site',
        '--allowed-origins',
        'example.com,shop.example.org',
        '--json',
      )
    ).json();
    expect(write).toMatchObject({
      writeKey: expect.stringMatching(/^wk_/),
      allowedOrigins: ['example.com', 'shop.example.org'],
    });
    const listed = await request(h.app).get('/api/v1/write-keys').set('Authorization', `Bearer ${apiKey}`);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toEqual([write.id]);

    const keys = (await cli('api-keys', 'list', '--account', account.id, '--json')).json();
    expect(keys).toEqual([expect.objectContaining({ id: key.json().id, keyPrefix: apiKey.slice(0, 10) })]);
    expect(JSON.stringify(keys)).not.toContain(apiKey);

    expect((await cli('api-keys', 'revoke', key.json().id)).code).toBe(0);
    expect((await request(h.app).get('/api/v1/apps').set('Authorization', `Bearer ${apiKey}`)).status).toBe(
      401,
    );
  });

  it('issues keys with exactly the scopes asked for', async () => {
    const account = (await cli('accounts', 'create', '--name', 'Scoped', '--json')).json();
    const { apiKey } = (
      await cli('api-keys', 'create', '--account', account.id, '--scopes', 'apps.read', '--json')
    ).json();
    expect((await request(h.app).get('/api/v1/apps').set('Authorization', `Bearer ${apiKey}`)).status).toBe(
      200,
    );
    expect(
      (await request(h.app).get('/api/v1/sources').set('Authorization', `Bearer ${apiKey}`)).status,
    ).toBe(403);
  });

  it('prints human output without --json', async () => {
    const created = await cli('accounts', 'create', '--name', 'Human');
    expect(created.out).toMatch(/^account [0-9a-f-]{36} "Human" features: none/);
  });

  it('refuses bad input with a reason and a non-zero exit code', async () => {
    const badScope = await cli(
      'api-keys',
      'create',
      '--account',
      '00000000-0000-4000-8000-000000000000',
      '--scopes',
      'apps.delete',
    );
    expect(badScope.code).toBe(1);
    expect(badScope.err).toMatch(/expected "all" or a comma-separated list/);
    const noAccount = await cli(
      'api-keys',
      'create',
      '--account',
      '00000000-0000-4000-8000-000000000000',
      '--scopes',
      'all',
    );
    expect(noAccount).toMatchObject({
      code: 1,
      err: expect.stringMatching(/No account with id .* \(not_found\)/),
    });
    const feature = await cli('accounts', 'create', '--name', 'x', '--features', 'teleport');
    expect(feature).toMatchObject({ code: 1, err: expect.stringMatching(/Unknown feature teleport/) });
    expect((await cli('accounts', 'create')).code).toBe(1);
    expect((await cli('nonsense')).code).toBe(1);
    expect((await cli('--help')).code).toBe(0);
  });
});
