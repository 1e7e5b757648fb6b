import { PassThrough } from 'node:stream';
import { isAppError } from '@pipeline/errors';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneUnavailable, UNSUBSCRIBED_MAX_TTL_MS, type WriteKeyRecord } from '@pipeline/tenancy';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import {
  HostedAuthenticator,
  writeKeyCacheOptions,
  type HostedAuthenticatorOptions,
} from './hosted-authenticator';
import { StaticAuthenticator } from './static-authenticator';

// The write-key checks with the control plane's answers given: which keys are looked up at
// all, what is cached and for how long, and what a caller is told when the answer is missing.
// The real control plane and revocations over Redis are in revocation.test.ts.

const SECOND = 1000;
const HOUR = 3_600_000;

function tenant(writeKeyId: string, status: WriteKeyRecord['status'] = 'active'): WriteKeyRecord {
  return {
    accountId: `acc-${writeKeyId}`,
    writeKeyId,
    status,
    allowedOrigins: [],
    destinations: [],
    warehouse: null,
  };
}

async function refusal(
  attempt: Promise<unknown>,
): Promise<{ status: number; code: string; details: unknown }> {
  try {
    await attempt;
  } catch (error) {
    if (!isAppError(error)) throw error;
    return { status: error.status, code: error.code, details: error.details };
  }
  throw new Error('not refused');
}

const INVALID = { status: 401, code: 'invalid_write_key', details: undefined };
const UNAVAILABLE = { status: 503, code: 'auth_unavailable', details: { retryAfter: 5 } };

/** A control plane that knows `records` by write key, or is down. */
function controlPlane(records: Record<string, WriteKeyRecord>) {
  const plane = {
    down: null as Error | null,
    asked: [] as string[],
    async resolve(writeKey: string): Promise<WriteKeyRecord | null> {
      plane.asked.push(writeKey);
      if (plane.down) throw plane.down;
      return records[writeKey] ?? null;
    },
  };
  return plane;
}

function hosted(
  plane: ReturnType<typeof controlPlane>,
  options: Partial<HostedAuthenticatorOptions> = {},
  clock = { now: 1_000_000 },
) {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(chunk.toString()));
  const authenticator = new HostedAuthenticator(
    plane,
    { validTtlMs: HOUR, invalidTtlMs: 30 * SECOND, ...options },
    createLogger({ service: 'auth-test', stream }),
    () => clock.now,
  );
  return { authenticator, lines, clock };
}

describe('HostedAuthenticator', () => {
  it('answers an active key with its tenant and keeps it known valid; one lookup', async () => {
    const plane = controlPlane({ wk_live: tenant('wk-1') });
    const { authenticator } = hosted(plane, { hearsRevocations: () => true });
    expect(authenticator.mode).toBe('hosted');
    expect(authenticator.isKnownValid('wk_live')).toBe(false);
    expect(await authenticator.authenticate('wk_live')).toEqual(tenant('wk-1'));
    expect(authenticator.isKnownValid('wk_live')).toBe(true);
    expect(await authenticator.authenticate('wk_live')).toEqual(tenant('wk-1'));
    expect(plane.asked).toEqual(['wk_live']);
    expect(authenticator.lookups).toBe(1);
  });

  it('refuses an unknown key and a revoked one, and never counts them known valid', async () => {
    const plane = controlPlane({ wk_revoked: tenant('wk-2', 'revoked') });
    const { authenticator } = hosted(plane);
    expect(await refusal(authenticator.authenticate('wk_unknown'))).toEqual(INVALID);
    expect(await refusal(authenticator.authenticate('wk_revoked'))).toEqual(INVALID);
    expect(authenticator.isKnownValid('wk_unknown')).toBe(false);
    expect(authenticator.isKnownValid('wk_revoked')).toBe(false);
    expect(plane.asked).toEqual(['wk_unknown', 'wk_revoked']);
  });

  it('refuses what cannot be a key without asking the control plane', async () => {
    const plane = controlPlane({});
    const { authenticator } = hosted(plane);
    for (const key of ['', 'wk with space', 'x'.repeat(201), 'wk_é']) {
      expect(await refusal(authenticator.authenticate(key))).toEqual(INVALID);
    }
    expect(plane.asked).toEqual([]);
    expect(authenticator.lookups).toBe(0);
  });

  it('keeps two keys apart', async () => {
    const plane = controlPlane({ wk_a: tenant('wk-a'), wk_b: tenant('wk-b') });
    const { authenticator } = hosted(plane);
    expect((await authenticator.authenticate('wk_a')).writeKeyId).toBe('wk-a');
    expect((await authenticator.authenticate('wk_b')).writeKeyId).toBe('wk-b');
    expect((await authenticator.authenticate('wk_a')).writeKeyId).toBe('wk-a');
    expect(plane.asked).toEqual(['wk_a', 'wk_b']);
  });

  it('caches a valid key for validTtlMs and an unknown one for invalidTtlMs', async () => {
    const plane = controlPlane({ wk_live: tenant('wk-1') });
    const { authenticator, clock } = hosted(
      plane,
      { validTtlMs: 60 * SECOND, invalidTtlMs: 5 * SECOND, hearsRevocations: () => true },
      { now: 1_000_000 },
    );
    await authenticator.authenticate('wk_live');
    await refusal(authenticator.authenticate('wk_unknown'));
    clock.now += 5 * SECOND - 1;
    await authenticator.authenticate('wk_live');
    await refusal(authenticator.authenticate('wk_unknown'));
    expect(plane.asked).toEqual(['wk_live', 'wk_unknown']);
    clock.now += 1;
    await refusal(authenticator.authenticate('wk_unknown'));
    expect(plane.asked).toEqual(['wk_live', 'wk_unknown', 'wk_unknown']);
    clock.now += 55 * SECOND - 1;
    expect(authenticator.isKnownValid('wk_live')).toBe(true);
    clock.now += 1;
    expect(authenticator.isKnownValid('wk_live')).toBe(false);
    await authenticator.authenticate('wk_live');
    expect(plane.asked).toEqual(['wk_live', 'wk_unknown', 'wk_unknown', 'wk_live']);
  });

  it('keeps a valid key at most 10 s while revocations are not heard, its TTL while they are', async () => {
    const plane = controlPlane({ wk_live: tenant('wk-1') });
    let hears = false;
    const { authenticator, clock } = hosted(plane, { hearsRevocations: () => hears });
    await authenticator.authenticate('wk_live');
    clock.now += UNSUBSCRIBED_MAX_TTL_MS;
    expect(authenticator.isKnownValid('wk_live')).toBe(false);
    hears = true;
    expect(authenticator.isKnownValid('wk_live')).toBe(true);
  });

  it('without hearsRevocations, treats revocations as not heard', async () => {
    const plane = controlPlane({ wk_live: tenant('wk-1') });
    const { authenticator, clock } = hosted(plane);
    await authenticator.authenticate('wk_live');
    clock.now += UNSUBSCRIBED_MAX_TTL_MS - 1;
    expect(authenticator.isKnownValid('wk_live')).toBe(true);
    clock.now += 1;
    expect(authenticator.isKnownValid('wk_live')).toBe(false);
  });

  it('drops a revoked key on the change message, and only that key', async () => {
    const plane = controlPlane({ wk_a: tenant('wk-a'), wk_b: tenant('wk-b') });
    const { authenticator } = hosted(plane, { hearsRevocations: () => true });
    await authenticator.authenticate('wk_a');
    await authenticator.authenticate('wk_b');
    authenticator.invalidate({ kind: 'write_key_revoked', accountId: 'acc-wk-a', writeKeyId: 'wk-a' });
    expect(authenticator.isKnownValid('wk_a')).toBe(false);
    expect(authenticator.isKnownValid('wk_b')).toBe(true);
  });

  it('answers auth_unavailable while the control plane is down, logged', async () => {
    const plane = controlPlane({ wk_live: tenant('wk-1') });
    plane.down = new ControlPlaneUnavailable('connect ECONNREFUSED');
    const { authenticator, lines } = hosted(plane);
    expect(await refusal(authenticator.authenticate('wk_live'))).toEqual(UNAVAILABLE);
    const logged = await waitUntil('the warning', async () => lines.find((l) => l.includes('cannot check')));
    expect(JSON.parse(logged)).toMatchObject({
      level: 'warn',
      message: 'control plane unavailable; cannot check write key',
      error: 'connect ECONNREFUSED',
    });
  });

  it('lets any other failure of the lookup through as it is', async () => {
    const plane = controlPlane({});
    const failure = new TypeError('a bug');
    plane.down = failure;
    const { authenticator } = hosted(plane);
    await expect(authenticator.authenticate('wk_live')).rejects.toBe(failure);
  });

  it('serves a known-valid key past its TTL for staleIfErrorMs while the control plane is down', async () => {
    const plane = controlPlane({ wk_live: tenant('wk-1') });
    const results: string[] = [];
    const { authenticator, clock, lines } = hosted(plane, {
      validTtlMs: 60 * SECOND,
      staleIfErrorMs: 30 * SECOND,
      hearsRevocations: () => true,
      onCacheResult: (result) => results.push(result),
    });
    await authenticator.authenticate('wk_live');
    await authenticator.authenticate('wk_live');
    plane.down = new ControlPlaneUnavailable('timeout');
    clock.now += 60 * SECOND + 29 * SECOND;
    expect(await authenticator.authenticate('wk_live')).toEqual(tenant('wk-1'));
    clock.now += SECOND;
    expect(await refusal(authenticator.authenticate('wk_live'))).toEqual(UNAVAILABLE);
    expect(results).toEqual(['miss', 'hit', 'stale', 'miss']);
    const logged = await waitUntil('the stale warning', async () =>
      lines.find((l) => l.includes('past its TTL')),
    );
    expect(JSON.parse(logged)).toMatchObject({ cache: 'write keys', error: 'timeout' });
  });

  it('evicts the least recently used key beyond maxEntries', async () => {
    const plane = controlPlane({ wk_a: tenant('wk-a'), wk_b: tenant('wk-b') });
    const { authenticator } = hosted(plane, { maxEntries: 1, hearsRevocations: () => true });
    await authenticator.authenticate('wk_a');
    await authenticator.authenticate('wk_b');
    expect(authenticator.isKnownValid('wk_a')).toBe(false);
    expect(authenticator.isKnownValid('wk_b')).toBe(true);
  });
});

describe('writeKeyCacheOptions', () => {
  it('holds 50,000 keys by default and passes only the options given', () => {
    expect(writeKeyCacheOptions({ validTtlMs: HOUR, invalidTtlMs: 30 * SECOND })).toStrictEqual({
      ttlMs: HOUR,
      unknownTtlMs: 30 * SECOND,
      maxEntries: 50_000,
      name: 'write keys',
    });
  });

  it('passes every option given, renamed for the tenant cache', () => {
    const hears = () => true;
    const onResult = () => undefined;
    expect(
      writeKeyCacheOptions({
        validTtlMs: 2,
        invalidTtlMs: 1,
        maxEntries: 7,
        staleIfErrorMs: 0,
        hearsRevocations: hears,
        onCacheResult: onResult,
      }),
    ).toStrictEqual({
      ttlMs: 2,
      unknownTtlMs: 1,
      maxEntries: 7,
      name: 'write keys',
      staleIfErrorMs: 0,
      hearsChanges: hears,
      onResult,
    });
  });
});

describe('StaticAuthenticator', () => {
  const only = tenant('static');

  it('answers the configured key with the one tenant', async () => {
    const authenticator = new StaticAuthenticator('wk_static_key', only);
    expect(authenticator.mode).toBe('static');
    expect(authenticator.isKnownValid('wk_static_key')).toBe(true);
    expect(await authenticator.authenticate('wk_static_key')).toBe(only);
  });

  it('refuses any other key, however close', async () => {
    const authenticator = new StaticAuthenticator('wk_static_key', only);
    for (const key of ['wk_static_ke', 'wk_static_key ', 'WK_STATIC_KEY', '', 'wk_static_keyy']) {
      expect(authenticator.isKnownValid(key)).toBe(false);
      expect(await refusal(authenticator.authenticate(key))).toEqual(INVALID);
    }
  });
});
