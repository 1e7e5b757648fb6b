import { Client } from 'pg';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { WarehouseWriter } from './warehouse-writer';

// The warehouse consumer loads several outbox partitions at once (WAREHOUSE_PARTITIONS_CONCURRENTLY).
// Two batches that update the same users in opposite orders must wait for each other, not
// deadlock (a deadlock would only be retried, but it stalls the batch for a backoff).
const receipt = { receivedAt: new Date('2026-03-01T12:00:00Z'), ip: '198.51.100.1', userAgent: 'UA' };
function identify(userId: string, round: number, batch: string): WarehouseRow {
  const result = validateEvent({
    type: 'identify',
    messageId: `m-${round}-${batch}-${userId}`,
    // Each round's events are newer than the last round's: the newest event's traits win.
    timestamp: `2026-03-01T11:00:${String(round).padStart(2, '0')}Z`,
    anonymousId: 'anon',
    userId,
    traits: { [`from_${batch}`]: round },
  });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, receipt);
}

describe('WarehouseWriter: batches loaded at once (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let writers: [WarehouseWriter, WarehouseWriter];
  let client: Client;

  beforeAll(async () => {
    db = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'warehouse concurrency',
    );
    writers = [new WarehouseWriter(db.url), new WarehouseWriter(db.url)];
    await writers[0].ensureSchema('acct_c');
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await Promise.all(writers.map((w) => w.close()));
    await db.drop();
  });

  it('two batches upserting the same users in opposite orders both land, in every round', async () => {
    const users = Array.from({ length: 200 }, (_, i) => `u${String(i).padStart(3, '0')}`);
    const rounds = 15;
    for (let round = 0; round < rounds; round++) {
      const forward = users.map((u) => identify(u, round, 'a'));
      const backward = [...users].reverse().map((u) => identify(u, round, 'b'));
      const results = await Promise.allSettled([
        writers[0].write('acct_c', forward),
        writers[1].write('acct_c', backward),
      ]);
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
      expect({ round, failures }).toEqual({ round, failures: [] });
    }
    const { rows } = await client.query(
      "SELECT count(*)::int AS users, min(traits->>'from_a') AS a, min(traits->>'from_b') AS b FROM acct_c.users",
    );
    // Traits merge: every user carries both batches' trait, from the last round.
    expect(rows).toEqual([{ users: 200, a: String(rounds - 1), b: String(rounds - 1) }]);
  });
});
