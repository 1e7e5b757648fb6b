import { AppError } from '@pipeline/errors';
import { checkName, toView } from './write-key-view';
import type { WriteKeyEntity } from './write-key.entity';

// A plain object: the entity class would load TypeORM into every mutant run.
const record = (fields: Partial<WriteKeyEntity>): WriteKeyEntity => ({
  id: '0b7e5b1c-6f0e-4c47-9c39-1f6a3a0d2e11',
  accountId: '5d1f2c3b-0000-4000-8000-000000000001',
  name: 'site',
  keyPrefix: 'wk_Ab3dE6',
  keyHash: 'f'.repeat(64),
  allowedOrigins: ['example.com'],
  rateLimitEventsPerSecond: 50,
  rateLimitEventsPerDay: null,
  createdAt: new Date('2026-01-02T03:04:05.000Z'),
  updatedAt: new Date('2026-01-03T03:04:05.000Z'),
  revokedAt: null,
  ...fields,
});

describe('toView', () => {
  it('answers an active key by its prefix and a masked form, never its hash', () => {
    const view = toView(record({}));
    expect(view).toEqual({
      id: '0b7e5b1c-6f0e-4c47-9c39-1f6a3a0d2e11',
      name: 'site',
      keyPrefix: 'wk_Ab3dE6',
      maskedKey: 'wk_Ab3dE6…',
      allowedOrigins: ['example.com'],
      state: 'active',
      rateLimits: { eventsPerSecond: 50, eventsPerDay: null },
      createdAt: '2026-01-02T03:04:05.000Z',
      updatedAt: '2026-01-03T03:04:05.000Z',
      revokedAt: null,
    });
    expect(JSON.stringify(view)).not.toContain('ffff');
  });

  it('answers a revoked key as revoked, with when', () => {
    const view = toView(
      record({
        revokedAt: new Date('2026-02-01T00:00:00.000Z'),
        rateLimitEventsPerSecond: null,
        rateLimitEventsPerDay: 9,
      }),
    );
    expect([view.state, view.revokedAt, view.rateLimits]).toEqual([
      'revoked',
      '2026-02-01T00:00:00.000Z',
      { eventsPerSecond: null, eventsPerDay: 9 },
    ]);
  });
});

describe('checkName', () => {
  it('trims the name', () => {
    expect(checkName('  shop site \t')).toBe('shop site');
  });

  it.each(['', '   ', '\n\t'])('refuses the blank name %j naming body.name', (name) => {
    let caught: unknown;
    try {
      checkName(name);
    } catch (error) {
      caught = error;
    }
    if (!(caught instanceof AppError)) throw new Error('expected an AppError');
    expect([caught.status, caught.code, caught.details?.errors]).toEqual([
      400,
      'validation_failed',
      [{ path: 'body.name', message: 'must not be blank' }],
    ]);
  });
});
