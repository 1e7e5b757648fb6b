import { ownerFieldsAfter } from './owner-status';

// What a source or an integration records when its job changes state. Pure: jobs.test.ts and
// job-errors.test.ts cover the same over a real database.

const statuses = {
  running: 'syncing',
  queued: 'pending',
  succeeded: 'ok',
  failed: 'error',
  paused: 'paused',
  idle: 'waiting',
} as const;
const now = new Date('2026-03-04T05:06:07.000Z');
const active = { paused: false, consecutiveFailures: 2 };
const paused = { paused: true, consecutiveFailures: 2 };
const error = { code: 'stripe_unauthorized', message: 'stripe answered 401' };

describe('ownerFieldsAfter', () => {
  it('records running, queued and success, and resets the failures on success', () => {
    expect(ownerFieldsAfter({ to: 'running' }, active, statuses, now)).toEqual({ status: 'syncing' });
    expect(ownerFieldsAfter({ to: 'queued', reason: 'deferred' }, active, statuses, now)).toEqual({
      status: 'pending',
    });
    expect(
      ownerFieldsAfter({ to: 'succeeded', counts: { rowsRead: 1, rowsWritten: 1 } }, active, statuses, now),
    ).toEqual({
      status: 'ok',
      lastSyncAt: now,
      lastError: null,
      consecutiveFailures: 0,
    });
  });

  it('records a retry’s transient error with when, without counting it', () => {
    expect(ownerFieldsAfter({ to: 'queued', reason: 'retry', error }, active, statuses, now)).toEqual({
      status: 'pending',
      lastError: { ...error, at: '2026-03-04T05:06:07.000Z' },
    });
  });

  it('records a failure with when, and one more consecutive failure', () => {
    expect(ownerFieldsAfter({ to: 'failed', error }, active, statuses, now)).toEqual({
      status: 'error',
      lastError: { ...error, at: '2026-03-04T05:06:07.000Z' },
      consecutiveFailures: 3,
    });
  });

  it('keeps a paused owner paused whatever its job does', () => {
    expect(
      [
        ownerFieldsAfter({ to: 'running' }, paused, statuses, now),
        ownerFieldsAfter({ to: 'queued', reason: 'requeued' }, paused, statuses, now),
        ownerFieldsAfter({ to: 'succeeded', counts: { rowsRead: 0, rowsWritten: 0 } }, paused, statuses, now),
        ownerFieldsAfter({ to: 'failed', error }, paused, statuses, now),
      ].map((fields) => fields?.status),
    ).toEqual(['paused', 'paused', 'paused', 'paused']);
    expect(ownerFieldsAfter({ to: 'failed', error }, paused, statuses, now)?.consecutiveFailures).toBe(3);
  });

  it('leaves the owner idle (paused if it is) when its job is cancelled, its last sync and error kept', () => {
    expect(ownerFieldsAfter({ to: 'cancelled' }, active, statuses, now)).toEqual({ status: 'waiting' });
    expect(ownerFieldsAfter({ to: 'cancelled' }, paused, statuses, now)).toEqual({ status: 'paused' });
  });

  it('stamps the current time when none is given', () => {
    const before = Date.now();
    const fields = ownerFieldsAfter(
      { to: 'succeeded', counts: { rowsRead: 0, rowsWritten: 0 } },
      active,
      statuses,
    );
    const at = fields?.lastSyncAt?.getTime() ?? 0;
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });
});
