import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { createLogger, type Logger } from '@pipeline/logger';
import type { ResolvedWarehouse, WarehouseConnection } from '@pipeline/tenancy';
import { DestinationUnavailable } from '../destination';
import {
  ResolvingWarehouseDirectory,
  StaticWarehouseDirectory,
  warehouseConnectionFromUrl,
  warehouseUrlField,
  type ResolveWarehouse,
} from './warehouse-directory';

const logger = createLogger({ service: 'warehouse-directory-test', stream: new PassThrough() });
const accountId = '0b0e5c3c-1c2d-4e5f-8a9b-0c1d2e3f4a5b';

const connection = (warehouseId: string): WarehouseConnection => ({
  warehouseId,
  engine: 'postgres',
  host: `${warehouseId}.internal`,
  port: 5432,
  database: 'warehouse',
  user: 'loader',
  password: 'pw',
  tlsMode: 'require',
  owner: 'platform',
  maxConnections: 4,
});
const placed = (warehouseId: string, epoch: number): ResolvedWarehouse => ({
  placement: { warehouseId, engine: 'postgres', schema: 'account_x', epoch },
  connection: connection(warehouseId),
});

describe('warehouseConnectionFromUrl', () => {
  it('reads every part, decoding the user and password', () => {
    expect(
      warehouseConnectionFromUrl('postgres://load%40er:p%2Fw%3Ad@db.example:6543/wh?sslmode=verify-full'),
    ).toEqual({
      warehouseId: 'default',
      engine: 'postgres',
      host: 'db.example',
      port: 6543,
      database: 'wh',
      user: 'load@er',
      password: 'p/w:d',
      tlsMode: 'verify-full',
      owner: 'platform',
      maxConnections: 5,
    });
  });

  it('defaults: port 5432, user postgres, database the user, no TLS; IPv6 hosts without brackets', () => {
    expect(
      warehouseConnectionFromUrl('postgresql://[::1]', { warehouseId: 'wh-1', maxConnections: 9 }),
    ).toMatchObject({
      warehouseId: 'wh-1',
      host: '::1',
      port: 5432,
      user: 'postgres',
      database: 'postgres',
      password: '',
      tlsMode: 'disable',
      maxConnections: 9,
    });
    const modes = ['disable', 'prefer', 'require', 'no-verify', 'verify-ca', 'verify-full'].map(
      (mode) => warehouseConnectionFromUrl(`postgres://h/d?sslmode=${mode}`).tlsMode,
    );
    expect(modes).toEqual(['disable', 'require', 'require', 'require', 'verify-full', 'verify-full']);
  });

  it('refuses what a connection cannot carry, without quoting the URL', () => {
    expect(() => warehouseConnectionFromUrl('not a url with secret')).toThrow('WAREHOUSE_URL is not a URL');
    expect(() => warehouseConnectionFromUrl('mysql://u:secret@h/d')).toThrow(
      'WAREHOUSE_URL must be a postgres:// or clickhouse:// (clickhouses://) URL, not mysql:',
    );
    expect(() => warehouseConnectionFromUrl('postgres://u:secret@h/d?host=/tmp&sslcert=/x')).toThrow(
      'WAREHOUSE_URL parameters not supported: host, sslcert',
    );
    expect(() => warehouseConnectionFromUrl('postgres://h/d?sslmode=allow')).toThrow(
      'WAREHOUSE_URL sslmode not supported: allow',
    );
    expect(() => warehouseConnectionFromUrl('postgres://u:secret@/d')).toThrow('WAREHOUSE_URL is not a URL');
    expect(() => warehouseConnectionFromUrl('postgres:///d')).toThrow('WAREHOUSE_URL names no host');
  });

  it('keeps the rest of the path as the database, and a percent-encoded host as written', () => {
    expect(warehouseConnectionFromUrl('postgres://u@db.example/wh/x')).toMatchObject({
      host: 'db.example',
      database: 'wh/x',
    });
    expect(warehouseConnectionFromUrl('postgres://u@db.example/')).toMatchObject({ database: 'u' });
    expect(warehouseConnectionFromUrl('postgres://a%5Bb%5D/d').host).toBe('a%5Bb%5D');
  });
});

describe('warehouseConnectionFromUrl of a ClickHouse URL', () => {
  it('reads clickhouse:// as HTTP and clickhouses:// as HTTPS verifying the certificate', () => {
    expect(warehouseConnectionFromUrl('clickhouse://load_er:p%2Fw%3Ad%40@ch.example:9123/analytics')).toEqual(
      {
        warehouseId: 'default',
        engine: 'clickhouse',
        host: 'ch.example',
        port: 9123,
        database: 'analytics',
        user: 'load_er',
        password: 'p/w:d@',
        tlsMode: 'disable',
        owner: 'platform',
        maxConnections: 5,
      },
    );
    expect(
      warehouseConnectionFromUrl('clickhouses://u:pw@CH.Example.com/analytics', {
        warehouseId: 'wh-9',
        maxConnections: 7,
      }),
    ).toEqual({
      warehouseId: 'wh-9',
      engine: 'clickhouse',
      host: 'ch.example.com',
      port: 8443,
      database: 'analytics',
      user: 'u',
      password: 'pw',
      tlsMode: 'verify-full',
      owner: 'platform',
      maxConnections: 7,
    });
  });

  it('defaults: port 8123 (8443 over HTTPS), user and database `default`, no password; IPv6 without brackets', () => {
    expect(warehouseConnectionFromUrl('clickhouse://ch.internal')).toMatchObject({
      host: 'ch.internal',
      port: 8123,
      user: 'default',
      database: 'default',
      password: '',
      tlsMode: 'disable',
    });
    expect(warehouseConnectionFromUrl('clickhouse://ch.internal/')).toMatchObject({ database: 'default' });
    expect(warehouseConnectionFromUrl('clickhouses://[::1]').port).toBe(8443);
    expect(warehouseConnectionFromUrl('clickhouses://[::1]').host).toBe('::1');
    expect(warehouseConnectionFromUrl('clickhouse://10.1.2.3:8123/db').host).toBe('10.1.2.3');
  });

  it.each([
    [
      'clickhouse://u:secret@h/db?secure=true',
      'WAREHOUSE_URL parameters not supported: a clickhouse:// URL takes none',
    ],
    ['clickhouse://u:secret@h/db?', 'WAREHOUSE_URL parameters not supported: a clickhouse:// URL takes none'],
    [
      'clickhouses://u:secret@h/db?sslmode=disable',
      'WAREHOUSE_URL parameters not supported: a clickhouse:// URL takes none',
    ],
    ['clickhouse://u:secret@h/db#x', 'WAREHOUSE_URL fragment not supported'],
    ['clickhouse://u:secret@h/db#', 'WAREHOUSE_URL fragment not supported'],
    ['clickhouse:///db', 'WAREHOUSE_URL names no host'],
    ['clickhouse:/db', 'WAREHOUSE_URL names no host'],
    ['clickhouse://u:secret@%2Ftmp%2Fsock/db', 'WAREHOUSE_URL host must be a host name or an IP address'],
    ['clickhouse://u:secret@a%5Bb%5D/db', 'WAREHOUSE_URL host must be a host name or an IP address'],
    ['clickhouse://u:secret@-h/db', 'WAREHOUSE_URL host must be a host name or an IP address'],
    ['clickhouse://u:secret@h_1/db', 'WAREHOUSE_URL host must be a host name or an IP address'],
    ['clickhouse://u:secret@h:0/db', 'WAREHOUSE_URL port must be from 1 to 65535'],
    ['clickhouse://u:secret@h/db/extra', 'WAREHOUSE_URL path must be one database name'],
    ['clickhouse://u:secret@h//db', 'WAREHOUSE_URL path must be one database name'],
    [
      'clickhouse://u:secret@h/d%60b',
      'WAREHOUSE_URL database must be a plain name (letters, digits and _, at most 63)',
    ],
    [
      'clickhouse://u:secret@h/d%2Fb',
      'WAREHOUSE_URL database must be a plain name (letters, digits and _, at most 63)',
    ],
    [
      'clickhouse://u:secret@h/1db',
      'WAREHOUSE_URL database must be a plain name (letters, digits and _, at most 63)',
    ],
    [
      `clickhouse://u:secret@h/${'d'.repeat(64)}`,
      'WAREHOUSE_URL database must be a plain name (letters, digits and _, at most 63)',
    ],
    ['clickhouse://u:secret@h/%E0%A4%A', 'WAREHOUSE_URL database is not valid percent-encoding'],
    [
      'clickhouse://u%20x:secret@h/db',
      'WAREHOUSE_URL user must be a plain name (letters, digits and _, at most 63)',
    ],
    ['clickhouse://u:%E0%A4%A@h/db', 'WAREHOUSE_URL password is not valid percent-encoding'],
    [
      'clickhouse+http://u:secret@h/db',
      'WAREHOUSE_URL must be a postgres:// or clickhouse:// (clickhouses://) URL, not clickhouse+http:',
    ],
    [
      'http://u:secret@h:8123/db',
      'WAREHOUSE_URL must be a postgres:// or clickhouse:// (clickhouses://) URL, not http:',
    ],
  ])('refuses %s, without quoting it', (url, message) => {
    let thrown: unknown;
    try {
      warehouseConnectionFromUrl(url);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect((thrown as Error).message).toBe(message);
    expect((thrown as Error).message).not.toContain('secret');
  });

  it('gives back the fields of any URL built from valid ones (generated)', () => {
    const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/);
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
    fc.assert(
      fc.property(
        fc.array(label, { minLength: 1, maxLength: 4 }),
        fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
        name,
        name,
        fc.string({ maxLength: 40, unit: 'binary' }),
        fc.boolean(),
        (labels, port, database, user, password, https) => {
          const host = labels.join('.');
          const url = `${https ? 'clickhouses' : 'clickhouse'}://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}${port ? `:${port}` : ''}/${database}`;
          expect(warehouseConnectionFromUrl(url)).toEqual({
            warehouseId: 'default',
            engine: 'clickhouse',
            host,
            port: port ?? (https ? 8443 : 8123),
            database,
            user,
            password,
            tlsMode: https ? 'verify-full' : 'disable',
            owner: 'platform',
            maxConnections: 5,
          });
        },
      ),
      { numRuns: 100 },
    );
  });

  it('is the config field: a form the parser refuses stops the start, named, without the URL', () => {
    const field = warehouseUrlField('postgres://postgres@db.example:5432/analytics');
    expect(field.parse(undefined)).toBe('postgres://postgres@db.example:5432/analytics');
    expect(field.parse('clickhouses://u:pw@ch.example/analytics')).toBe(
      'clickhouses://u:pw@ch.example/analytics',
    );
    const refused = field.safeParse('clickhouse://u:secret@h/db?secure=1');
    expect(refused.success).toBe(false);
    expect(refused.error?.issues.map((issue) => issue.message)).toEqual([
      'parameters not supported: a clickhouse:// URL takes none',
    ]);
  });
});

describe('StaticWarehouseDirectory', () => {
  it("puts every account on the one warehouse, in the account's schema, at epoch 0", async () => {
    const directory = new StaticWarehouseDirectory(connection('default'));
    await expect(directory.resolve(accountId)).resolves.toEqual({
      placement: {
        warehouseId: 'default',
        engine: 'postgres',
        schema: 'account_0b0e5c3c1c2d4e5f8a9b0c1d2e3f4a5b',
        epoch: 0,
      },
      connection: connection('default'),
    });
    expect(directory.currentEpoch()).toBe(0);
  });
});

/** A control plane answering from `answers` in turn (the last one repeated), counting its calls. */
function controlPlane(answers: (ResolvedWarehouse | null | Error)[]) {
  const calls: string[] = [];
  const resolve: ResolveWarehouse = (id) => {
    calls.push(id);
    const answer = answers.length > 1 ? answers.shift() : answers[0];
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer ?? null);
  };
  return { calls, resolve };
}

describe('ResolvingWarehouseDirectory', () => {
  let now = 1_000_000;
  const clock = () => now;
  beforeEach(() => (now = 1_000_000));

  it('asks once per TTL, and concurrent resolves share one request', async () => {
    const cp = controlPlane([placed('wh-a', 1)]);
    const directory = new ResolvingWarehouseDirectory(cp.resolve, { ttlMs: 1000, now: clock }, logger);
    const [first, second] = await Promise.all([directory.resolve(accountId), directory.resolve(accountId)]);
    expect(first?.placement.warehouseId).toBe('wh-a');
    expect(second).toBe(first);
    now += 999;
    await directory.resolve(accountId);
    expect(cp.calls).toHaveLength(1);
    now += 1;
    await directory.resolve(accountId);
    expect(cp.calls).toEqual([accountId, accountId]);
  });

  it('while tenant changes are not heard, an answer is used 10 s at most', async () => {
    const cp = controlPlane([placed('wh-a', 1)]);
    let hears = false;
    const directory = new ResolvingWarehouseDirectory(
      cp.resolve,
      { ttlMs: 60_000, now: clock, hearsChanges: () => hears },
      logger,
    );
    await directory.resolve(accountId);
    now += 9_999;
    await directory.resolve(accountId);
    expect(cp.calls).toHaveLength(1);
    now += 1;
    await directory.resolve(accountId);
    expect(cp.calls).toHaveLength(2);
    hears = true;
    now += 50_000;
    await directory.resolve(accountId);
    expect(cp.calls).toHaveLength(2);
  });

  it("a tenant change drops the account's entry, a resync every entry", async () => {
    const cp = controlPlane([placed('wh-a', 1), placed('wh-b', 2), placed('wh-c', 3)]);
    const directory = new ResolvingWarehouseDirectory(cp.resolve, { ttlMs: 60_000, now: clock }, logger);
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-a');
    directory.invalidate({ kind: 'tenant_changed', accountId: 'someone-else' });
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-a');
    directory.invalidate({ kind: 'tenant_changed', accountId });
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-b');
    directory.invalidate({ kind: 'resync' });
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-c');
    expect(cp.calls).toHaveLength(3);
  });

  it('an answer to a request under way when a change was heard is handed out, not kept', async () => {
    let answer: (value: ResolvedWarehouse) => void = () => undefined;
    let calls = 0;
    const directory = new ResolvingWarehouseDirectory(
      () => {
        calls += 1;
        return calls === 1
          ? new Promise<ResolvedWarehouse>((resolve) => (answer = resolve))
          : Promise.resolve(placed('wh-new', 2));
      },
      { ttlMs: 60_000, now: clock },
      logger,
    );
    const pending = directory.resolve(accountId);
    directory.invalidate({ kind: 'tenant_changed', accountId });
    answer(placed('wh-old', 1));
    expect((await pending)?.placement.warehouseId).toBe('wh-old');
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-new');
    expect(calls).toBe(2);
  });

  it('never uses a placement older than the newest epoch it saw: a lagging answer is asked again', async () => {
    const cp = controlPlane([placed('wh-b', 5), placed('wh-a', 4), placed('wh-b', 5)]);
    const directory = new ResolvingWarehouseDirectory(cp.resolve, { ttlMs: 60_000, now: clock }, logger);
    expect(directory.currentEpoch(accountId)).toBe(0);
    await directory.resolve(accountId);
    expect(directory.currentEpoch(accountId)).toBe(5);
    directory.invalidate({ kind: 'tenant_changed', accountId });
    expect((await directory.resolve(accountId))?.placement).toMatchObject({ warehouseId: 'wh-b', epoch: 5 });
    expect(cp.calls).toHaveLength(3);

    const stuck = controlPlane([placed('wh-b', 5), placed('wh-a', 4)]);
    const lagging = new ResolvingWarehouseDirectory(stuck.resolve, { ttlMs: 60_000, now: clock }, logger);
    await lagging.resolve(accountId);
    lagging.invalidate({ kind: 'tenant_changed', accountId });
    await expect(lagging.resolve(accountId)).rejects.toThrow(
      new DestinationUnavailable(`warehouse placement of ${accountId} is older than epoch 5`),
    );
  });

  it('control plane down: a stale answer within staleIfErrorMs, else DestinationUnavailable', async () => {
    const cp = controlPlane([placed('wh-a', 1), new Error('connect ECONNREFUSED 10.0.0.1:3000')]);
    const directory = new ResolvingWarehouseDirectory(
      cp.resolve,
      { ttlMs: 1000, staleIfErrorMs: 5000, now: clock },
      logger,
    );
    await directory.resolve(accountId);
    now += 1000 + 4999;
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-a');
    now += 1;
    const error = await directory.resolve(accountId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationUnavailable);
    expect((error as Error).message).toBe('warehouse placement unknown: connect ECONNREFUSED 10.0.0.1:3000');

    const never = new ResolvingWarehouseDirectory(
      controlPlane([new Error('503')]).resolve,
      { ttlMs: 1000, now: clock },
      logger,
    );
    await expect(never.resolve(accountId)).rejects.toBeInstanceOf(DestinationUnavailable);
  });

  it('by default tenant changes are heard and a stale answer serves 15 minutes past its TTL', async () => {
    const cp = controlPlane([placed('wh-a', 1), new Error('connect ECONNREFUSED 10.0.0.1:3000')]);
    const directory = new ResolvingWarehouseDirectory(cp.resolve, { ttlMs: 60_000, now: clock }, logger);
    await directory.resolve(accountId);
    // Past the 10 s bound of a consumer that does not hear changes: still the cached answer.
    now += 59_999;
    await directory.resolve(accountId);
    expect(cp.calls).toHaveLength(1);
    now += 1 + 15 * 60_000 - 1;
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-a');
    now += 1;
    await expect(directory.resolve(accountId)).rejects.toBeInstanceOf(DestinationUnavailable);
    expect(cp.calls).toHaveLength(3);
  });

  it('says when it serves a stale answer, and keeps the control plane error as the cause', async () => {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
    const watched: Logger = createLogger({ service: 'warehouse-directory-test', format: 'json', stream });
    const down = new Error('connect ECONNREFUSED 10.0.0.1:3000');
    const cp = controlPlane([placed('wh-a', 1), down]);
    const directory = new ResolvingWarehouseDirectory(
      cp.resolve,
      { ttlMs: 1000, staleIfErrorMs: 5000, now: clock },
      watched,
    );
    await directory.resolve(accountId);
    now += 1000;
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-a');
    for (let waited = 0; lines.length === 0 && waited < 2000; waited += 10)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'warn',
      message: 'warehouse placement served stale: the control plane cannot be asked',
      accountId,
      error: 'connect ECONNREFUSED 10.0.0.1:3000',
    });
    now += 5000;
    const error = await directory.resolve(accountId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationUnavailable);
    expect((error as Error).cause).toBe(down);
  });

  it('an answer to a request under way when a resync was heard is handed out, not kept', async () => {
    let answer: (value: ResolvedWarehouse) => void = () => undefined;
    let calls = 0;
    const directory = new ResolvingWarehouseDirectory(
      () => {
        calls += 1;
        return calls === 1
          ? new Promise<ResolvedWarehouse>((resolve) => (answer = resolve))
          : Promise.resolve(placed('wh-new', 2));
      },
      { ttlMs: 60_000, now: clock },
      logger,
    );
    const pending = directory.resolve(accountId);
    directory.invalidate({ kind: 'resync' });
    answer(placed('wh-old', 1));
    expect((await pending)?.placement.warehouseId).toBe('wh-old');
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-new');
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-new');
    expect(calls).toBe(2);
  });

  it('remembers the changes of at most maxEntries accounts while requests are under way', async () => {
    /** Resolves the account with a request a change of `changed` accounts is heard during; the calls made. */
    const callsAfterChanges = async (changed: string[]) => {
      let answer: (value: ResolvedWarehouse) => void = () => undefined;
      let calls = 0;
      const directory = new ResolvingWarehouseDirectory(
        () => {
          calls += 1;
          return calls === 1
            ? new Promise<ResolvedWarehouse>((resolve) => (answer = resolve))
            : Promise.resolve(placed('wh-a', 1));
        },
        { ttlMs: 60_000, maxEntries: 2, now: clock },
        logger,
      );
      const pending = directory.resolve(accountId);
      for (const id of changed) directory.invalidate({ kind: 'tenant_changed', accountId: id });
      answer(placed('wh-a', 1));
      await pending;
      await directory.resolve(accountId);
      return calls;
    };
    // Two changed accounts fit: the account's change is remembered, its answer not kept.
    expect(await callsAfterChanges([accountId, 'other-1'])).toBe(2);
    // A third one clears the memory: the answer is kept as if no change had been heard.
    expect(await callsAfterChanges([accountId, 'other-1', 'other-2'])).toBe(1);
  });

  it('an account without a warehouse is remembered for the unknown TTL only', async () => {
    const cp = controlPlane([null, placed('wh-a', 1)]);
    const directory = new ResolvingWarehouseDirectory(cp.resolve, { ttlMs: 60_000, now: clock }, logger);
    expect(await directory.resolve(accountId)).toBeNull();
    now += 9999;
    expect(await directory.resolve(accountId)).toBeNull();
    now += 1;
    expect((await directory.resolve(accountId))?.placement.warehouseId).toBe('wh-a');
    expect(cp.calls).toHaveLength(2);
  });
});
