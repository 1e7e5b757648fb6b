import { createClient, type ClickHouseClient } from '@clickhouse/client';
import fc from 'fast-check';
import { Client } from 'pg';
import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { normalizeEvent, validateEvent, type WarehouseRow, type WarehouseTable } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import {
  clickhouseConnectionOf,
  clickhouseTableRows,
  postgresTableRows,
} from '../testing/warehouse-table-rows';
import { warehouseConnectionOf } from '../testing/warehouse-connection';
import { ClickHouseEngine } from './clickhouse/clickhouse-engine';
import { subjectIdsTable } from './clickhouse/clickhouse-subject-erasure';
import { PostgresEngine } from './postgres/postgres-engine';
import type { AccountLocation, SubjectIds, SubjectRowCounts, WarehouseEngine } from './warehouse-engine';
import { defaultWarehouseTimeouts } from './warehouse-pool';

// A regulated subject's rows on both engines, against real PostgreSQL and ClickHouse (chdb's
// engine behind its HTTP interface): exactly the rows naming a subject go, in every table and
// in that account only; the dry run's counts are what the erasure removes; groups keep the
// group; ids of any Unicode cross into SQL intact; purging leaves no masked or dead row.

type EngineName = 'postgres' | 'clickhouse';
const engineNames: EngineName[] = ['postgres', 'clickhouse'];
const options = { timeouts: defaultWarehouseTimeouts, poolMax: 4, idleTimeoutMs: 10_000 };

const receipt = { ip: '198.51.100.1', userAgent: 'UA' };
let clock = Date.parse('2026-03-01T12:00:00Z');
/** A normalized row; each later than the last, so the newest event of a group is the last written. */
function row(event: object): WarehouseRow {
  const result = validateEvent({
    anonymousId: 'anon-none',
    timestamp: new Date(clock).toISOString(),
    ...event,
  });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  clock += 1000;
  return normalizeEvent(result.event, { ...receipt, receivedAt: new Date(clock) });
}

const none: SubjectRowCounts = { events: 0, users: 0, groups: 0, aliases: 0 };

describe('erasing regulated subjects (real PostgreSQL and ClickHouse)', () => {
  let db: ScratchDatabase;
  let pg: Client;
  let server: ClickHouseTestServer;
  let ch: ClickHouseClient;
  const engines = {} as Record<EngineName, WarehouseEngine>;

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'subject erasure');
    pg = new Client({ connectionString: db.url });
    await pg.connect();
    await pg.query('CREATE EXTENSION IF NOT EXISTS pgstattuple');
    server = await startClickHouseTestServer({ user: 'loader', password: 'loader-secret' });
    ch = createClient({ url: server.url, username: server.user, password: server.password });
    engines.postgres = new PostgresEngine(warehouseConnectionOf(db.url, 'pg'), options);
    engines.clickhouse = new ClickHouseEngine(clickhouseConnectionOf(server, 'ch'), options);
  }, 90_000);
  afterAll(async () => {
    await Promise.all(Object.values(engines).map((engine) => engine.close()));
    await ch?.close();
    await server?.destroy();
    await pg?.end();
    await db?.drop();
  }, 60_000);

  describe.each(engineNames)('%s', (name) => {
    const engine = () => engines[name];
    const tableRows = (account: AccountLocation, table: WarehouseTable) =>
      name === 'postgres'
        ? postgresTableRows(db.url, account.schema, table)
        : clickhouseTableRows(ch, account.schema, table);
    const keys = async (account: AccountLocation, table: WarehouseTable) =>
      (await tableRows(account, table)).map((r) => String(r.message_id)).sort();

    /** Calls eraseSubjects until it says nothing remains; the calls' results in order. */
    async function eraseAll(account: AccountLocation, subjects: SubjectIds, maxRows: number) {
      const calls: SubjectRowCounts[] = [];
      for (let more = true; more;) {
        const result = await engine().eraseSubjects(account, subjects, { maxRows });
        calls.push(result.erased);
        more = result.more;
        if (calls.length > 1000) throw new Error('the erasure does not converge');
      }
      return calls;
    }
    const total = (calls: SubjectRowCounts[]) =>
      calls.reduce((sum, c) => ({
        events: sum.events + c.events,
        users: sum.users + c.users,
        groups: sum.groups + c.groups,
        aliases: sum.aliases + c.aliases,
      }));

    it("erases every row naming a subject, in every table, in that account only; the dry run's counts are what goes", async () => {
      const account = { accountId: 'acc-a', schema: `erase_a_${name}` };
      const other = { accountId: 'acc-b', schema: `erase_b_${name}` };
      const rows = [
        // X by user id (with an anonymous id that is not named), and by anonymous id alone.
        row({ type: 'track', messageId: 'x-1', event: 'Viewed', userId: 'user-x', anonymousId: 'anon-x1' }),
        row({ type: 'page', messageId: 'x-2', name: 'Home', anonymousId: 'anon-x2' }),
        row({ type: 'track', messageId: 'x-3', event: 'Bought', userId: 'user-x', anonymousId: 'anon-x2' }),
        // A bystander whose anonymous id equals X's user id: anonymous ids are matched only when named.
        row({ type: 'track', messageId: 'b-1', event: 'Viewed', userId: 'user-b', anonymousId: 'user-x' }),
        row({ type: 'track', messageId: 'b-2', event: 'Viewed', anonymousId: 'anon-b' }),
        row({
          type: 'identify',
          messageId: 'xu-1',
          userId: 'user-x',
          traits: { email: 'X.Person@Example.com' },
        }),
        row({ type: 'identify', messageId: 'bu-1', userId: 'user-b', traits: { email: 'b@example.com' } }),
        // Group 1: B joined first, X last (X's row is the newest); group 2: B only.
        row({
          type: 'group',
          messageId: 'g1-b',
          groupId: 'group-1',
          userId: 'user-b',
          traits: { name: 'Acme' },
        }),
        row({
          type: 'group',
          messageId: 'g1-x',
          groupId: 'group-1',
          userId: 'user-x',
          anonymousId: 'anon-x1',
          traits: { plan: 'pro' },
          context: { ip: '203.0.113.9', page: { url: 'https://acme.example/x' } },
        }),
        row({
          type: 'group',
          messageId: 'g2-b',
          groupId: 'group-2',
          userId: 'user-b',
          traits: { name: 'Beta' },
        }),
        // Aliases: X as the new id, X as the previous id (by user id and by anonymous id), and B's own.
        row({
          type: 'alias',
          messageId: 'al-1',
          userId: 'user-x',
          previousId: 'anon-old',
          anonymousId: 'anon-z',
        }),
        row({
          type: 'alias',
          messageId: 'al-2',
          userId: 'user-y',
          previousId: 'user-x',
          anonymousId: 'anon-z',
        }),
        row({
          type: 'alias',
          messageId: 'al-3',
          userId: 'user-z',
          previousId: 'anon-x2',
          anonymousId: 'anon-z',
        }),
        row({
          type: 'alias',
          messageId: 'al-4',
          userId: 'user-b',
          previousId: 'anon-b',
          anonymousId: 'anon-b',
        }),
      ];
      await engine().writeRows(account, rows);
      // The other account has the same user: nothing of it goes.
      await engine().writeRows(other, rows);
      const subjects: SubjectIds = { userIds: ['user-x'], anonymousIds: ['anon-x2'] };

      const counted = await engine().countSubjectRows(account, subjects);
      // users: the stored rows of the user (ClickHouse keeps each identify; one here).
      expect(counted).toEqual({ events: 3, users: 1, groups: 1, aliases: 3 });
      expect(await engine().subjectEmails(account, subjects)).toEqual(['X.Person@Example.com']);

      const calls = await eraseAll(account, subjects, 1000);
      expect(total(calls)).toEqual(counted);
      expect(await engine().countSubjectRows(account, subjects)).toEqual(none);
      expect(await engine().subjectEmails(account, subjects)).toEqual([]);

      expect(await keys(account, 'events')).toEqual(['b-1', 'b-2']);
      expect((await tableRows(account, 'users')).map((r) => r.user_id)).toEqual(['user-b']);
      expect(await keys(account, 'aliases')).toEqual(['al-4']);
      const groups = await tableRows(account, 'groups');
      expect(groups.map((g) => g.group_id)).toEqual(['group-1', 'group-2']);
      const [group1, group2] = groups;
      if (name === 'postgres') {
        // The group's row stays, its traits too; the member who set it last is gone from it.
        expect([group1?.user_id, group1?.anonymous_id, group1?.context_ip, group1?.context_page_url]).toEqual(
          [null, null, null, null],
        );
        expect(group1?.traits).toEqual({ name: 'Acme', plan: 'pro' });
      } else {
        // The view shows the newest remaining member; the trait only X's event set is gone with it.
        expect([group1?.user_id, group1?.message_id, group1?.context_ip]).toEqual([
          'user-b',
          'g1-b',
          '198.51.100.1',
        ]);
        expect(group1?.traits).toEqual({ name: 'Acme' });
      }
      expect([group2?.user_id, group2?.traits]).toEqual(['user-b', { name: 'Beta' }]);

      // Everything of the other account stayed.
      expect(await engine().countSubjectRows(other, subjects)).toEqual(counted);
      expect(await keys(other, 'events')).toEqual(['b-1', 'b-2', 'x-1', 'x-2', 'x-3']);
      expect(await engine().subjectEmails(other, subjects)).toEqual(['X.Person@Example.com']);

      // Again: nothing left, nothing changes.
      expect(await engine().eraseSubjects(account, subjects, { maxRows: 1000 })).toEqual({
        erased: none,
        more: false,
      });
    });

    it('converges over repeated calls; on PostgreSQL no statement touches more than maxRows', async () => {
      const account = { accountId: 'acc-c', schema: `erase_chunks_${name}` };
      const rows = [
        ...Array.from({ length: 23 }, (_, i) =>
          row({ type: 'track', messageId: `x-${i}`, event: 'E', userId: 'user-x', anonymousId: `anon-${i}` }),
        ),
        ...Array.from({ length: 9 }, (_, i) =>
          row({ type: 'alias', messageId: `al-${i}`, userId: `user-${i}`, previousId: 'anon-x' }),
        ),
        ...Array.from({ length: 5 }, (_, i) =>
          row({ type: 'track', messageId: `b-${i}`, event: 'E', userId: 'user-b' }),
        ),
      ];
      await engine().writeRows(account, rows);
      const subjects = { userIds: ['user-x'], anonymousIds: ['anon-x'] };
      const counted = await engine().countSubjectRows(account, subjects);
      expect(counted).toEqual({ events: 23, users: 0, groups: 0, aliases: 9 });
      const calls = await eraseAll(account, subjects, 4);
      expect(total(calls)).toEqual(counted);
      if (name === 'postgres') {
        expect(calls.every((c) => Object.values(c).every((n) => n <= 4))).toBe(true);
        // 23 events in chunks of 4: six calls remove rows, the seventh finds the last 3 and stops.
        expect(calls.length).toBe(6);
      } else {
        // One lightweight DELETE per table masks them all.
        expect(calls.length).toBe(1);
      }
      expect(await keys(account, 'events')).toEqual(['b-0', 'b-1', 'b-2', 'b-3', 'b-4']);
      expect(await keys(account, 'aliases')).toEqual([]);
    });

    it('purging leaves no erased row on disk: no masked row (ClickHouse), no dead tuple (PostgreSQL)', async () => {
      const account = { accountId: 'acc-p', schema: `erase_purge_${name}` };
      await engine().writeRows(account, [
        ...Array.from({ length: 10 }, (_, i) =>
          row({ type: 'track', messageId: `x-${i}`, event: 'E', userId: 'user-x' }),
        ),
        ...Array.from({ length: 10 }, (_, i) =>
          row({ type: 'track', messageId: `b-${i}`, event: 'E', userId: 'user-b' }),
        ),
        row({ type: 'identify', messageId: 'xu', userId: 'user-x', traits: { email: 'x@example.com' } }),
      ]);
      const subjects = { userIds: ['user-x'], anonymousIds: [] };
      await eraseAll(account, subjects, 1000);
      if (name === 'clickhouse') {
        const stored = async () => {
          const result = await ch.query({
            query: `SELECT table, toString(sum(rows)) AS rows, toString(max(has_lightweight_delete)) AS masked
                      FROM system.parts WHERE database = {db:String} AND active AND table IN ('events', 'users_rows')
                     GROUP BY table ORDER BY table`,
            query_params: { db: account.schema },
            format: 'JSONEachRow',
          });
          return result.json<{ table: string; rows: string; masked: string }>();
        };
        // Masked: the parts still hold the rows, flagged.
        expect(await stored()).toEqual([
          { table: 'events', rows: '20', masked: '1' },
          { table: 'users_rows', rows: '1', masked: '1' },
        ]);
        await engine().purgeErased(account);
        // Rewritten: the parts hold only what remains.
        expect(await stored()).toEqual([
          { table: 'events', rows: '10', masked: '0' },
          { table: 'users_rows', rows: '0', masked: '0' },
        ]);
        const result = await ch.query({
          query: `SELECT toString(count()) AS n FROM \`${account.schema}\`.events SETTINGS apply_deleted_mask = 0`,
          format: 'JSONEachRow',
        });
        expect(await result.json()).toEqual([{ n: '10' }]);
      } else {
        const dead = async (table: string) => {
          const { rows } = await pg.query<{ dead: number; live: number }>(
            `SELECT dead_tuple_count::int AS dead, tuple_count::int AS live FROM pgstattuple($1)`,
            [`${account.schema}.${table}`],
          );
          return rows[0];
        };
        expect(await dead('events')).toEqual({ dead: 10, live: 10 });
        await engine().purgeErased(account);
        expect(await dead('events')).toEqual({ dead: 0, live: 10 });
        expect(await dead('users')).toEqual({ dead: 0, live: 0 });
      }
      expect(await keys(account, 'events')).toEqual(Array.from({ length: 10 }, (_, i) => `b-${i}`));
    });

    it('answers zeros for an account without tables and for no ids, and creates nothing', async () => {
      const missing = { accountId: 'acc-none', schema: `erase_none_${name}` };
      const subjects = { userIds: ['user-x'], anonymousIds: ['anon-x'] };
      expect(await engine().countSubjectRows(missing, subjects)).toEqual(none);
      expect(await engine().subjectEmails(missing, subjects)).toEqual([]);
      expect(await engine().eraseSubjects(missing, subjects, { maxRows: 10 })).toEqual({
        erased: none,
        more: false,
      });
      await engine().purgeErased(missing);
      expect(await engine().accountTables(missing)).toEqual([]);
      const account = { accountId: 'acc-empty', schema: `erase_empty_ids_${name}` };
      await engine().writeRows(account, [row({ type: 'track', messageId: 'm', event: 'E', userId: 'u' })]);
      expect(
        await engine().eraseSubjects(account, { userIds: [], anonymousIds: [] }, { maxRows: 10 }),
      ).toEqual({
        erased: none,
        more: false,
      });
      expect(await keys(account, 'events')).toEqual(['m']);
      // The ids' table of the ClickHouse engine is not an account table (a move does not copy it).
      expect(await engine().accountTables(account)).toEqual(['events', 'users', 'groups', 'aliases']);
    });

    it('with a cut-off erases only the events and aliases received at or before it, and the user whenever', async () => {
      const account = { accountId: 'acc-cutoff', schema: `erase_cutoff_${name}` };
      const before = row({ type: 'track', messageId: 'before', event: 'E', userId: 'user-x' });
      const at = row({ type: 'alias', messageId: 'alias-at', userId: 'user-y', previousId: 'user-x' });
      const cutoff = new Date(String(at.row.received_at));
      const after = row({ type: 'track', messageId: 'after', event: 'E', userId: 'user-x' });
      const aliasAfter = row({
        type: 'alias',
        messageId: 'alias-after',
        userId: 'user-z',
        previousId: 'user-x',
      });
      const identify = row({ type: 'identify', messageId: 'who', userId: 'user-x', traits: { plan: 'pro' } });
      await engine().writeRows(account, [before, at, after, aliasAfter, identify]);
      const subjects = { userIds: ['user-x'], anonymousIds: [], receivedAtOrBefore: cutoff };
      expect(await engine().countSubjectRows(account, subjects)).toEqual({
        events: 1,
        users: 1,
        groups: 0,
        aliases: 1,
      });
      await eraseAll(account, subjects, 1);
      expect(await engine().countSubjectRows(account, subjects)).toEqual(none);
      expect(await keys(account, 'events')).toEqual(['after']);
      expect(await keys(account, 'aliases')).toEqual(['alias-after']);
      expect(await keys(account, 'users')).toEqual([]);
    });

    it('an aborted signal stops the erasure before it changes anything', async () => {
      const account = { accountId: 'acc-abort', schema: `erase_abort_${name}` };
      await engine().writeRows(account, [
        row({ type: 'track', messageId: 'x', event: 'E', userId: 'user-x' }),
      ]);
      const controller = new AbortController();
      controller.abort();
      await expect(
        engine().eraseSubjects(
          account,
          { userIds: ['user-x'], anonymousIds: [] },
          {
            maxRows: 10,
            signal: controller.signal,
          },
        ),
      ).rejects.toThrow();
      expect(await keys(account, 'events')).toEqual(['x']);
    });

    it('an id with a NUL or an unpaired surrogate erases the rows the door stored for it (U+FFFD)', async () => {
      const account = { accountId: 'acc-nul', schema: `erase_nul_${name}` };
      // The door stores these ids with U+FFFD in place of the NUL and of the lone surrogate.
      await engine().writeRows(account, [
        row({ type: 'track', messageId: 'nul', event: 'E', userId: 'user\u0000x' }),
        row({ type: 'track', messageId: 'surrogate', event: 'E', userId: 'user\ud800y' }),
        row({ type: 'track', messageId: 'plain', event: 'E', userId: 'userx' }),
        row({ type: 'track', messageId: 'replacement', event: 'E', userId: 'user\ufffdz' }),
      ]);
      const subjects = { userIds: ['user\u0000x', 'user\udfffy', 'user', 'user\u0000'], anonymousIds: [] };
      expect((await engine().countSubjectRows(account, subjects)).events).toBe(2);
      expect((await engine().eraseSubjects(account, subjects, { maxRows: 10 })).erased.events).toBe(2);
      expect(await keys(account, 'events')).toEqual(['plain', 'replacement']);
    });

    it('ids of any Unicode (quotes, backslashes, emoji) erase exactly the rows that carry them (property)', async () => {
      // Well-formed Unicode: a NUL or a lone surrogate is stored as U+FFFD (the test above), so
      // two such ids could name one stored id where the model sees two.
      const id = fc
        .string({ unit: 'binary', minLength: 1, maxLength: 8 })
        .filter((s) => !s.includes('\u0000'));
      const pool = fc.uniqueArray(
        fc.oneof(id, fc.constantFrom("'", '\\', "\\'", '`', '😀', 'a"b', '${x}', '%s')),
        {
          minLength: 2,
          maxLength: 6,
        },
      );
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          pool,
          fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat(), fc.boolean()), { minLength: 1, maxLength: 8 }),
          fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1, maxLength: 3 }),
          async (ids, events, named) => {
            run += 1;
            const account = { accountId: `acc-prop-${run}`, schema: `erase_prop_${run}_${name}` };
            const pick = (n: number) => ids[n % ids.length] as string;
            const seeded = events.map(([u, a, p, alias], i) =>
              alias
                ? {
                    key: `m${i}`,
                    table: 'aliases' as const,
                    user: pick(u),
                    anonymous: pick(a),
                    previous: pick(p),
                  }
                : {
                    key: `m${i}`,
                    table: 'events' as const,
                    user: pick(u),
                    anonymous: pick(a),
                    previous: null,
                  },
            );
            await engine().writeRows(
              account,
              seeded.map((s) =>
                s.table === 'aliases'
                  ? row({
                      type: 'alias',
                      messageId: s.key,
                      userId: s.user,
                      anonymousId: s.anonymous,
                      previousId: s.previous,
                    })
                  : row({
                      type: 'track',
                      messageId: s.key,
                      event: 'E',
                      userId: s.user,
                      anonymousId: s.anonymous,
                    }),
              ),
            );
            const subjects = {
              userIds: named.filter(([, user]) => user).map(([n]) => pick(n)),
              anonymousIds: named.filter(([, user]) => !user).map(([n]) => pick(n)),
            };
            // The model: a user id matches user_id and previous_id, an anonymous id anonymous_id and previous_id.
            const users = new Set(subjects.userIds);
            const anonymous = new Set(subjects.anonymousIds);
            const goes = (s: (typeof seeded)[number]) =>
              users.has(s.user) ||
              anonymous.has(s.anonymous) ||
              (s.previous !== null && (users.has(s.previous) || anonymous.has(s.previous)));
            const expected = (table: 'events' | 'aliases') => seeded.filter((s) => s.table === table);
            const counted = await engine().countSubjectRows(account, subjects);
            expect(counted).toEqual({
              events: expected('events').filter(goes).length,
              users: 0,
              groups: 0,
              aliases: expected('aliases').filter(goes).length,
            });
            expect(total(await eraseAll(account, subjects, 2))).toEqual(counted);
            for (const table of ['events', 'aliases'] as const) {
              expect(await keys(account, table)).toEqual(
                expected(table)
                  .filter((s) => !goes(s))
                  .map((s) => s.key)
                  .sort(),
              );
            }
            await engine().dropAccount(account);
          },
        ),
        { numRuns: 12 },
      );
    }, 120_000);
  });

  it('the ClickHouse ids of a call are gone from its Memory table when the call ends', async () => {
    const account = { accountId: 'acc-ids', schema: 'erase_ids_left' };
    await engines.clickhouse.writeRows(account, [
      row({ type: 'track', messageId: 'x', event: 'E', userId: 'user-x' }),
    ]);
    await engines.clickhouse.eraseSubjects(
      account,
      { userIds: ['user-x'], anonymousIds: ['a'] },
      { maxRows: 1 },
    );
    await engines.clickhouse.countSubjectRows(account, { userIds: ['user-y'], anonymousIds: [] });
    const result = await ch.query({
      query: `SELECT toString(count()) AS n FROM \`${account.schema}\`.\`${subjectIdsTable}\``,
      format: 'JSONEachRow',
    });
    expect(await result.json()).toEqual([{ n: '0' }]);
  });
});
