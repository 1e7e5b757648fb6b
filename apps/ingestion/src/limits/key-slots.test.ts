import calculateSlot from 'cluster-key-slot';
import { batchDedupeId, batchDedupeKey } from '../outbox/batch-dedupe-key';
import { authAttemptWindow, sharedWindowKeys } from './limit-windows';

// In a Redis Cluster one script may only touch keys of one hash slot: the shared-limit script
// takes a request's second and day windows and its batch's dedupe key together. The slots are
// computed as ioredis computes them to route a command, with the service's key prefix.

const NOON = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
const PREFIX = 'ingestion:';

const requestKeys = (writeKeyId: string, nowMs: number) => [
  ...sharedWindowKeys(writeKeyId, nowMs),
  batchDedupeKey(writeKeyId, batchDedupeId('acc_1', ['m1', 'm2'])),
];

describe('the keys of one /collect request in a Redis Cluster', () => {
  it('share one hash slot: the windows and the dedupe key, with the key prefix', () => {
    for (const writeKeyId of ['wk_1', '7f1c0a52-3f0e-4a53-9a51-1f3b0c6e2d11', 'a:b', 'x{y']) {
      const keys = requestKeys(writeKeyId, NOON).map((key) => PREFIX + key);
      expect(new Set(keys.map((key) => calculateSlot(key))).size).toBe(1);
      expect(calculateSlot.generateMulti(keys)).toBe(calculateSlot(keys[0] ?? ''));
    }
  });

  it('keep their slot across seconds and days: the slot is the write key’s alone', () => {
    const slots = [NOON, NOON + 1000, NOON + 86_400_000].map((at) =>
      calculateSlot.generateMulti(requestKeys('wk_1', at).map((key) => PREFIX + key)),
    );
    expect(slots).toEqual([slots[0], slots[0], slots[0]]);
    expect(slots[0]).toBe(calculateSlot('wk_1'));
  });

  it('spread over the cluster for different write keys', () => {
    const slots = new Set(
      Array.from({ length: 100 }, (_, i) => calculateSlot.generateMulti(requestKeys(`wk_${i}`, NOON))),
    );
    // 100 write keys over 16,384 slots: all but a few distinct; one slot would mean one node.
    expect(slots.size).toBeGreaterThan(95);
  });

  it('an auth attempt window is one key: its MULTI of INCR and EXPIRE stays in one slot', () => {
    const { key } = authAttemptWindow('198.51.100.7', NOON);
    expect(calculateSlot.generateMulti([key, key])).toBe(calculateSlot(key));
  });
});
