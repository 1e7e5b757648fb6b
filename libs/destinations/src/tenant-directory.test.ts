import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneUnavailable, type TenantRecord } from '@pipeline/tenancy';
import { TenantDirectory, type TenantDirectoryOptions } from './tenant-directory';

// The directory's own choices (the unknown-key TTL, stale use while the control plane is
// down, whether changes are heard), against an in-memory control plane and a hand-set clock.

const logs: string[] = [];
const stream = new PassThrough();
stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
const logger = createLogger({ service: 'tenant-directory-test', stream });
const tenant: TenantRecord = {
  accountId: 'acct-1',
  writeKeyId: 'wk-1',
  status: 'active',
  allowedOrigins: [],
  destinations: [],
  warehouse: null,
};

function directory(options: TenantDirectoryOptions) {
  const clock = { now: 0 };
  const control = { down: false, asked: [] as string[] };
  const client = {
    lookup: (writeKeyId: string) => {
      control.asked.push(writeKeyId);
      if (control.down) return Promise.reject(new ControlPlaneUnavailable('control plane down'));
      return Promise.resolve(writeKeyId === 'wk-1' ? tenant : null);
    },
  };
  return { clock, control, tenants: new TenantDirectory(client, options, logger, () => clock.now) };
}

describe('TenantDirectory', () => {
  it('remembers an unknown key for the TTL, at most 10 s, unless told', async () => {
    const long = directory({ ttlMs: 60_000, hearsChanges: () => true });
    await long.tenants.forWriteKey('wk-x');
    long.clock.now = 9_999;
    expect(await long.tenants.forWriteKey('wk-x')).toBeNull();
    expect(long.tenants.lookups).toBe(1);
    long.clock.now = 10_000;
    await long.tenants.forWriteKey('wk-x');
    expect(long.tenants.lookups).toBe(2);

    const short = directory({ ttlMs: 5_000, hearsChanges: () => true });
    await short.tenants.forWriteKey('wk-x');
    short.clock.now = 5_000;
    await short.tenants.forWriteKey('wk-x');
    expect(short.tenants.lookups).toBe(2);

    const told = directory({ ttlMs: 60_000, unknownTtlMs: 30_000, hearsChanges: () => true });
    await told.tenants.forWriteKey('wk-x');
    told.clock.now = 29_999;
    await told.tenants.forWriteKey('wk-x');
    expect(told.tenants.lookups).toBe(1);
  });

  it('keeps a tenant for the TTL while changes are heard, 10 s at most while they are not', async () => {
    const hearing = directory({ ttlMs: 60_000, hearsChanges: () => true });
    expect(await hearing.tenants.forWriteKey('wk-1')).toEqual(tenant);
    hearing.clock.now = 30_000;
    await hearing.tenants.forWriteKey('wk-1');
    expect(hearing.control.asked).toEqual(['wk-1']);

    const deaf = directory({ ttlMs: 60_000 });
    await deaf.tenants.forWriteKey('wk-1');
    deaf.clock.now = 30_000;
    await deaf.tenants.forWriteKey('wk-1');
    expect(deaf.control.asked).toEqual(['wk-1', 'wk-1']);
  });

  it('uses a tenant past its TTL while the control plane is down, for staleIfErrorMs', async () => {
    const { clock, control, tenants } = directory({
      ttlMs: 1_000,
      staleIfErrorMs: 5_000,
      hearsChanges: () => true,
    });
    await tenants.forWriteKey('wk-1');
    control.down = true;
    clock.now = 5_999;
    expect(await tenants.forWriteKey('wk-1')).toEqual(tenant);
    const warnings = logs.map(
      (line) => JSON.parse(line) as { msg?: string; message?: string; cache?: string },
    );
    expect(warnings.filter((w) => w.cache !== undefined).map((w) => w.cache)).toEqual(['tenant directory']);
    clock.now = 6_000;
    await expect(tenants.forWriteKey('wk-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);

    const lasting = directory({ ttlMs: 1_000, hearsChanges: () => true });
    await lasting.tenants.forWriteKey('wk-1');
    lasting.control.down = true;
    lasting.clock.now = 60_000;
    expect(await lasting.tenants.forWriteKey('wk-1')).toEqual(tenant);
  });

  it('holds at most maxEntries tenants, evicting the least recently used', async () => {
    const { control, tenants } = directory({ ttlMs: 60_000, maxEntries: 1, hearsChanges: () => true });
    await tenants.forWriteKey('wk-1');
    await tenants.forWriteKey('wk-x');
    await tenants.forWriteKey('wk-1');
    expect(control.asked).toEqual(['wk-1', 'wk-x', 'wk-1']);
  });

  it('drops an account’s entries on a change', async () => {
    const { control, tenants } = directory({ ttlMs: 60_000, hearsChanges: () => true });
    await tenants.forWriteKey('wk-1');
    tenants.invalidate({ kind: 'tenant_changed', accountId: 'acct-2' });
    await tenants.forWriteKey('wk-1');
    tenants.invalidate({ kind: 'tenant_changed', accountId: 'acct-1' });
    await tenants.forWriteKey('wk-1');
    expect(control.asked).toEqual(['wk-1', 'wk-1']);
  });
});
