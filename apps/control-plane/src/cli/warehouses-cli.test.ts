import { defaultWarehouseTimeouts, WarehouseEngines } from '@pipeline/destinations';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness } from '../testing/harness';
import { runOperatorCli, type CliOptions } from './operator-cli';

const PASSWORD = 'cli-Secret-pw-4e1d';

describe('operator CLI: warehouses (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('warehouses cli', {
      warehouseUrl: 'postgres://loader:first-pw@127.0.0.1:5432/wh_one',
    });
  });
  afterAll(() => h.close());

  async function cli(argv: string[], options: CliOptions = { credentialKeys: TEST_CREDENTIAL_KEYS }) {
    let out = '';
    let err = '';
    const code = await runOperatorCli(
      argv,
      h.db.dataSource,
      { out: (t) => (out += t), err: (t) => (err += t) },
      options,
    );
    return { code, out, err, json: () => JSON.parse(out) };
  }

  it('adds, lists, sets the default and lists its accounts', async () => {
    const early = await h.tenant();
    const listed = await cli(['warehouses', 'list', '--json']);
    expect(listed.code).toBe(0);
    expect(listed.json()).toEqual([
      expect.objectContaining({
        name: 'default',
        host: '127.0.0.1',
        database: 'wh_one',
        user: 'loader',
        password: '**********',
        isDefault: true,
        accounts: 1,
        status: 'active',
      }),
    ]);

    const added = await cli(
      [
        'warehouses',
        'add',
        '--name',
        'second',
        '--host',
        'wh2.internal',
        '--port',
        '6432',
        '--database',
        'wh2',
        '--user',
        'u2',
        '--password-env',
        'WH2_PASSWORD',
        '--tls-mode',
        'require',
        '--max-connections',
        '5',
        '--json',
      ],
      { credentialKeys: TEST_CREDENTIAL_KEYS, env: { WH2_PASSWORD: PASSWORD } },
    );
    expect(added.code).toBe(0);
    expect(added.json()).toMatchObject({
      name: 'second',
      host: 'wh2.internal',
      port: 6432,
      database: 'wh2',
      user: 'u2',
      password: '**********',
      tlsMode: 'require',
      maxConnections: 5,
      isDefault: false,
    });
    const second = added.json().id as string;
    const entity = await h.services.warehouses.find(second);
    expect(h.services.warehouses.connectionOf(entity).password).toBe(PASSWORD);

    const setDefault = await cli(['warehouses', 'set-default', 'second']);
    expect([setDefault.code, setDefault.out]).toEqual([0, `warehouse ${second} "second" is the default`]);
    const created = (await cli(['accounts', 'create', '--name', 'Late', '--json'])).json();
    const onSecond = await cli(['warehouses', 'accounts', second, '--json']);
    expect(onSecond.json()).toEqual([
      {
        accountId: created.id,
        accountName: 'Late',
        schema: `account_${(created.id as string).replace(/-/g, '')}`,
        epoch: 1,
        placedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
    const onDefault = (await cli(['warehouses', 'accounts', 'default', '--json'])).json();
    expect(onDefault.map((a: { accountId: string }) => a.accountId)).toEqual([early.accountId]);

    const human = (await cli(['warehouses', 'list'])).out.split('\n');
    expect(human).toEqual([
      `${(await h.services.warehouses.find('default')).id}  default  postgres  loader@127.0.0.1:5432/wh_one  1 accounts  size unknown  active`,
      `${second}  second [default]  postgres  u2@wh2.internal:6432/wh2  1 accounts  size unknown  active`,
    ]);
    for (const output of [listed.out, added.out, human.join('\n')]) expect(output).not.toContain(PASSWORD);
  });

  it("lists a customer's warehouse with its account and app", async () => {
    const tenant = await h.tenant();
    // A draft app (no password: no connection test), made a warehouse as saving its password would.
    const app = await h.services.apps.create(tenant.accountId, {
      appType: 'postgres_warehouse',
      displayName: 'own server',
      config: { host: 'wh.customer.example', database: 'analytics', user: 'loader' },
    });
    await h.db.dataSource.transaction((manager) =>
      h.services.warehouses.saveCustomer(manager, {
        appId: app.id,
        accountId: tenant.accountId,
        host: 'wh.customer.example',
        port: 5432,
        database: 'analytics',
        user: 'loader',
        password: PASSWORD,
        tlsMode: 'verify-full',
        schema: 'pipeline',
      }),
    );
    const listed = await cli(['warehouses', 'list']);
    expect(listed.out.split('\n')).toContain(
      `${(await h.services.warehouses.ofApp(app.id))?.id}  app-${app.id} [customer: account ${tenant.accountId}, app ${app.id}]  postgres  loader@wh.customer.example:5432/analytics  0 accounts  size unknown  active`,
    );
    expect(listed.out).not.toContain(PASSWORD);
  });

  it("updates a warehouse's connection, the new password from the environment", async () => {
    const rotated = 'cli-rotated-pw-0c9d';
    const updated = await cli(
      [
        'warehouses',
        'update',
        'default',
        '--port',
        '6543',
        '--password-env',
        'NEW_PW',
        '--tls-mode',
        'verify-full',
        '--json',
      ],
      { credentialKeys: TEST_CREDENTIAL_KEYS, env: { NEW_PW: rotated } },
    );
    expect(updated.code).toBe(0);
    expect(updated.json()).toMatchObject({
      name: 'default',
      host: '127.0.0.1',
      port: 6543,
      database: 'wh_one',
      user: 'loader',
      password: '**********',
      tlsMode: 'verify-full',
    });
    expect(updated.out).not.toContain(rotated);
    const entity = await h.services.warehouses.find('default');
    expect(h.services.warehouses.connectionOf(entity)).toMatchObject({ port: 6543, password: rotated });
    const unset = await cli(['warehouses', 'update', 'default', '--password-env', 'NOPE'], {
      credentialKeys: TEST_CREDENTIAL_KEYS,
      env: {},
    });
    expect([unset.code, unset.err]).toEqual([1, 'error: the environment variable NOPE is not set\n']);
    const kept = await h.services.warehouses.find('default');
    expect(h.services.warehouses.connectionOf(kept).password).toBe(rotated);
    // A new host without the password: refused, the stored one never goes there.
    const moved = await cli(['warehouses', 'update', 'default', '--host', 'elsewhere.example'], {
      credentialKeys: TEST_CREDENTIAL_KEYS,
      env: {},
    });
    expect([moved.code, moved.err]).toEqual([
      1,
      'error: A change of host moves where the stored password is sent; enter the password again in the same request (a stored password is sent only to the server it was entered for) (secret_required_for_new_host)\n',
    ]);
    expect((await h.services.warehouses.find('default')).host).toBe('127.0.0.1');
  });

  it('checks a warehouse through the engine and records what it met', async () => {
    const engines = WarehouseEngines.open(
      { processMaxConnections: 4, idleMs: 5000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    const options: CliOptions = {
      credentialKeys: TEST_CREDENTIAL_KEYS,
      env: { EMPTY: '' },
      engineFor: (connection) => engines.for(connection),
    };
    try {
      const withUser = async (name: string, port: string) => {
        const added = await cli(
          [
            'warehouses',
            'add',
            '--name',
            name,
            '--host',
            '127.0.0.1',
            '--port',
            port,
            '--database',
            'postgres',
            '--user',
            'postgres',
            '--password-env',
            'EMPTY',
            '--tls-mode',
            'disable',
          ],
          options,
        );
        expect(added.code).toBe(0);
      };
      await withUser('reachable', '5432');
      await withUser('closed', '1');
      const reachable = await cli(['warehouses', 'check', 'reachable'], options);
      expect([reachable.code, reachable.out]).toEqual([
        0,
        `warehouse ${(await h.services.warehouses.find('reachable')).id} "reachable" active`,
      ]);
      const closed = await cli(['warehouses', 'check', 'closed', '--json'], options);
      expect(closed.json()).toMatchObject({
        name: 'closed',
        status: 'unavailable',
        statusDetail: 'probe failed (unavailable): connect ECONNREFUSED 127.0.0.1:1',
      });
      const noEngine = await cli(['warehouses', 'check', 'closed']);
      expect([noEngine.code, noEngine.err]).toEqual([
        1,
        'error: This process cannot open warehouses (warehouse_engine_unavailable)\n',
      ]);
    } finally {
      await engines.close();
    }
  });

  it('refuses what it cannot do, with the reason', async () => {
    const base = ['warehouses', 'add', '--name', 'third', '--host', 'h3', '--database', 'd', '--user', 'u'];
    const unset = await cli([...base, '--password-env', 'NOT_SET_ANYWHERE'], {
      credentialKeys: TEST_CREDENTIAL_KEYS,
      env: {},
    });
    expect([unset.code, unset.err]).toEqual([
      1,
      'error: the environment variable NOT_SET_ANYWHERE is not set\n',
    ]);
    const inline = await cli([...base, '--password', 'x']);
    // Commander stops at the first problem: the required --password-env, never the value given.
    expect(inline.code).toBe(1);
    expect(inline.err).toContain("required option '--password-env <variable>' not specified");
    expect(inline.err).not.toContain('x\n');
    const port = await cli([...base, '--password-env', 'P', '--port', '70000']);
    expect([port.code, port.err]).toEqual([
      1,
      expect.stringContaining('--port must be a whole number from 1 to 65535'),
    ]);
    const taken = await cli(
      ['warehouses', 'add', ...base.slice(2, 3), 'default', ...base.slice(4), '--password-env', 'P'],
      {
        credentialKeys: TEST_CREDENTIAL_KEYS,
        env: { P: 'x' },
      },
    );
    expect([taken.code, taken.err]).toEqual([1, expect.stringContaining('(warehouse_name_taken)')]);
    const tls = await cli([...base, '--password-env', 'P', '--tls-mode', 'prefer'], {
      credentialKeys: TEST_CREDENTIAL_KEYS,
      env: { P: 'x' },
    });
    expect([tls.code, tls.err]).toEqual([1, 'error: The request is not valid (validation_failed)\n']);
    const noKeys = await cli([...base, '--password-env', 'P'], { env: { P: 'x' } });
    expect([noKeys.code, noKeys.err]).toEqual([
      1,
      'error: CREDENTIALS_ENCRYPTION_KEYS is not set: warehouse passwords cannot be sealed or opened\n',
    ]);
    const unknown = await cli(['warehouses', 'set-default', 'nowhere']);
    expect([unknown.code, unknown.err]).toEqual([1, 'error: No warehouse nowhere (warehouse_not_found)\n']);
    expect(
      await h.db.dataSource.query("SELECT count(*)::int AS n FROM warehouses WHERE name = 'third'"),
    ).toEqual([{ n: 0 }]);
  });

  it('queues a move of an account and lists moves with their stage', async () => {
    const t = await h.tenant();
    const target = await h.services.warehouses.add({
      name: 'move-target',
      host: '127.0.0.1',
      port: 5432,
      database: 'wh_two',
      user: 'loader',
      password: 'pw',
      tlsMode: 'disable',
    });
    const moved = await cli(['warehouses', 'move', t.accountId, '--to', 'move-target', '--json']);
    expect(moved.code).toBe(0);
    const move = moved.json();
    expect(move).toMatchObject({
      accountId: t.accountId,
      toWarehouseId: target.id,
      stage: 'queued',
      error: null,
    });
    const [job] = (await h.db.dataSource.query('SELECT kind, status, account_id FROM jobs WHERE id = $1', [
      move.jobId,
    ])) as Record<string, unknown>[];
    expect(job).toEqual({ kind: 'warehouse_move', status: 'queued', account_id: t.accountId });

    const listed = await cli(['warehouses', 'moves', '--json']);
    expect(listed.json().map((m: { id: string }) => m.id)).toContain(move.id);
    const human = await cli(['warehouses', 'moves']);
    expect(human.out).toContain(
      `${move.id}  account ${t.accountId}  ${move.fromWarehouseId} -> ${target.id}  queued`,
    );

    const again = await cli(['warehouses', 'move', t.accountId, '--to', 'move-target']);
    expect([again.code, again.err]).toEqual([
      1,
      'error: The account is moving already: one move at a time (warehouse_move_in_progress)\n',
    ]);
    const nowhere = await cli(['warehouses', 'move', t.accountId, '--to', 'nowhere']);
    expect([nowhere.code, nowhere.err]).toEqual([1, 'error: No warehouse nowhere (warehouse_not_found)\n']);
    const missing = await cli(['warehouses', 'move', t.accountId]);
    expect([missing.code, missing.err]).toEqual([
      1,
      "error: required option '--to <warehouse>' not specified\n",
    ]);

    // Cancelled while queued: the job never starts, and a second cancel is refused.
    const cancelled = await cli(['warehouses', 'cancel-move', move.id, '--json']);
    expect(cancelled.code).toBe(0);
    expect(cancelled.json()).toMatchObject({
      id: move.id,
      stage: 'failed',
      error: { code: 'warehouse_move_cancelled' },
    });
    const [after] = (await h.db.dataSource.query('SELECT status FROM jobs WHERE id = $1', [
      move.jobId,
    ])) as Record<string, unknown>[];
    expect(after).toEqual({ status: 'cancelled' });
    const twice = await cli(['warehouses', 'cancel-move', move.id]);
    expect([twice.code, twice.err]).toEqual([
      1,
      `error: Move ${move.id} is failed already (warehouse_move_finished)\n`,
    ]);
  });
});
