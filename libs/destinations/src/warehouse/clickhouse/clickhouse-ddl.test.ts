import { warehouseTables } from '@pipeline/events';
import {
  clickhouseMigrations,
  columnType,
  databaseStatements,
  foldedView,
  insertColumns,
  isClickHouseDatabaseName,
  keyList,
  quoteName,
  quoteString,
  storedColumns,
  storedTableOf,
} from './clickhouse-ddl';

// The DDL as text, without a server; clickhouse-engine.test.ts runs it on ClickHouse.

const squash = (sql: string) => sql.replace(/\s+/g, ' ').trim();

describe('names', () => {
  it('quotes names and strings with their escapes', () => {
    expect(quoteName('a`b\\c')).toBe('`a\\`b\\\\c`');
    expect(quoteString("it's a \\ test")).toBe("'it\\'s a \\\\ test'");
  });

  it('takes plain lower-case database names of at most 63 characters', () => {
    expect(['account_0a1b', '_x', `a${'b'.repeat(62)}`].map(isClickHouseDatabaseName)).toEqual([
      true,
      true,
      true,
    ]);
    expect(
      ['', 'Account', '1abc', 'a-b', 'a.b', 'a`b', `a${'b'.repeat(63)}`, 'a\nb', 'system b'].map(
        isClickHouseDatabaseName,
      ),
    ).toEqual([false, false, false, false, false, false, false, false, false]);
  });

  it('stores users and groups in their rows tables, events and aliases in their own', () => {
    expect(['events', 'users', 'groups', 'aliases'].map((t) => storedTableOf(t as 'events'))).toEqual([
      'events',
      'users_rows',
      'groups_rows',
      'aliases',
    ]);
  });
});

describe('column types', () => {
  it('received_at is DateTime64(6, UTC); keys are never null; integers Int32; the rest text', () => {
    expect(columnType('events', 'received_at', 'timestamptz')).toBe("DateTime64(6, 'UTC')");
    expect(columnType('events', 'message_id', 'text')).toBe('String');
    expect(columnType('users', 'user_id', 'text')).toBe('String');
    expect(columnType('users', 'message_id', 'text')).toBe('String');
    expect(columnType('groups', 'group_id', 'text')).toBe('String');
    expect(columnType('aliases', 'message_id', 'text')).toBe('String');
    expect(columnType('aliases', 'previous_id', 'text')).toBe('Nullable(String)');
    expect(columnType('groups', 'user_id', 'text')).toBe('Nullable(String)');
    expect(columnType('events', 'user_id', 'text')).toBe('Nullable(String)');
    expect(columnType('events', 'context_screen_width', 'integer')).toBe('Nullable(Int32)');
    expect(columnType('events', 'timestamp', 'timestamptz')).toBe('Nullable(String)');
    expect(columnType('events', 'properties', 'jsonb')).toBe('Nullable(String)');
  });

  it("stores every column of warehouseTables, users' and groups' orders, and the version", () => {
    const events = storedColumns('events').map(([name]) => name);
    expect(events).toEqual([...Object.keys(warehouseTables.events), '_version']);
    expect(storedColumns('users').slice(-3)).toEqual([
      ['_event_order', 'String'],
      ['_trait_orders', "String DEFAULT '{}'"],
      ['_version', 'UInt64'],
    ]);
    expect(insertColumns('groups')).toEqual([
      ...Object.keys(warehouseTables.groups),
      '_event_order',
      '_version',
    ]);
    expect(insertColumns('aliases')).toEqual([...Object.keys(warehouseTables.aliases), '_version']);
  });
});

describe('migrations', () => {
  it('create the database and its migrations table', () => {
    expect(databaseStatements('account_a', {})).toEqual([
      'CREATE DATABASE IF NOT EXISTS `account_a`',
      "CREATE TABLE IF NOT EXISTS `account_a`._migrations (version UInt32, applied_at DateTime64(6, 'UTC') DEFAULT now64(6)) ENGINE = ReplacingMergeTree ORDER BY version",
    ]);
    expect(databaseStatements('account_a', { cluster: 'c1' })).toEqual([
      'CREATE DATABASE IF NOT EXISTS `account_a` ON CLUSTER `c1`',
      "CREATE TABLE IF NOT EXISTS `account_a`._migrations ON CLUSTER `c1` (version UInt32, applied_at DateTime64(6, 'UTC') DEFAULT now64(6)) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/account_a/_migrations', '{replica}') ORDER BY version",
    ]);
  });

  it('version 1: four tables on one server, deduplicating retried inserts, then the two views', () => {
    expect(clickhouseMigrations.map((m) => m.version)).toEqual([1, 2]);
    const [events, users, groups, aliases, usersView, groupsView, ...rest] =
      clickhouseMigrations[0]!.statements('account_a', {});
    expect(rest).toEqual([]);
    expect(events).toMatch(
      /^CREATE TABLE IF NOT EXISTS `account_a`\.`events` \(`message_id` String, `anonymous_id` Nullable\(String\), /,
    );
    expect(events).toContain("`received_at` DateTime64(6, 'UTC'), ");
    expect(events).toMatch(
      / `properties` Nullable\(String\), `plan_violations` Nullable\(String\), `_version` UInt64\) ENGINE = ReplacingMergeTree\(_version\) PARTITION BY toYYYYMM\(received_at\) ORDER BY message_id SETTINGS non_replicated_deduplication_window = 1000$/,
    );
    expect(aliases).toMatch(/^CREATE TABLE IF NOT EXISTS `account_a`\.`aliases` \(/);
    expect(aliases).toMatch(/ PARTITION BY toYYYYMM\(received_at\) ORDER BY message_id SETTINGS /);
    expect(users).toMatch(/^CREATE TABLE IF NOT EXISTS `account_a`\.`users_rows` \(`message_id` String, /);
    expect(users).toMatch(
      /`_event_order` String, `_trait_orders` String DEFAULT '\{\}', `_version` UInt64\) ENGINE = ReplacingMergeTree\(_version\) ORDER BY \(`user_id`, message_id\) SETTINGS non_replicated_deduplication_window = 1000$/,
    );
    expect(groups).toMatch(/`account_a`\.`groups_rows` .* ORDER BY \(`group_id`, message_id\) SETTINGS /);
    expect(usersView).toBe(foldedView('account_a', 'users'));
    expect(groupsView).toBe(foldedView('account_a', 'groups'));
  });

  it('version 2: plan_violations where version 1 now puts it, then the views again', () => {
    const single = clickhouseMigrations[1]!.statements('account_a', {});
    expect(single).toEqual([
      'ALTER TABLE `account_a`.`events` ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER `properties`',
      'ALTER TABLE `account_a`.`users_rows` ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER `traits`',
      'ALTER TABLE `account_a`.`groups_rows` ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER `traits`',
      'ALTER TABLE `account_a`.`aliases` ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER `previous_id`',
      foldedView('account_a', 'users'),
      foldedView('account_a', 'groups'),
    ]);
    const cluster = clickhouseMigrations[1]!.statements('account_a', { cluster: 'c1' });
    expect(cluster.slice(0, 2)).toEqual([
      'ALTER TABLE `account_a`.`events_local` ON CLUSTER `c1` ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER `properties`',
      'ALTER TABLE `account_a`.`events` ON CLUSTER `c1` ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER `properties`',
    ]);
    expect(cluster).toHaveLength(10);
    expect(cluster.slice(-2)).toEqual([
      foldedView('account_a', 'users', { cluster: 'c1' }),
      foldedView('account_a', 'groups', { cluster: 'c1' }),
    ]);
  });

  it('on a cluster: replicated local tables, Distributed tables sharded by the account, DDL on every node', () => {
    const statements = clickhouseMigrations[0]!.statements('account_a', { cluster: 'c1' });
    expect(statements).toHaveLength(10);
    const [eventsLocal, events, usersLocal, users] = statements;
    expect(eventsLocal).toMatch(/^CREATE TABLE IF NOT EXISTS `account_a`\.`events_local` ON CLUSTER `c1` \(/);
    expect(eventsLocal).toMatch(
      / ENGINE = ReplicatedReplacingMergeTree\('\/clickhouse\/tables\/\{shard\}\/account_a\/events_local', '\{replica\}', _version\) PARTITION BY toYYYYMM\(received_at\) ORDER BY message_id$/,
    );
    expect(events).toBe(
      "CREATE TABLE IF NOT EXISTS `account_a`.`events` ON CLUSTER `c1` AS `account_a`.`events_local` ENGINE = Distributed(`c1`, `account_a`, `events_local`, cityHash64('account_a'))",
    );
    expect(usersLocal).toMatch(
      /`account_a`\.`users_rows_local` ON CLUSTER `c1` .* ORDER BY \(`user_id`, message_id\)$/,
    );
    expect(users).toContain(
      '`account_a`.`users_rows` ON CLUSTER `c1` AS `account_a`.`users_rows_local` ENGINE = Distributed(',
    );
    expect(statements[8]).toMatch(/^CREATE OR REPLACE VIEW `account_a`\.`users` ON CLUSTER `c1` AS/);
  });
});

describe('foldedView', () => {
  const view = squash(foldedView('account_a', 'users'));

  it('takes each column of the newest event by _event_order, NULLs included', () => {
    expect(view).toMatch(
      /^CREATE OR REPLACE VIEW `account_a`\.`users` AS SELECT c\.`message_id` AS `message_id`, /,
    );
    for (const column of ['message_id', 'anonymous_id', 'timestamp', 'received_at', 'context_extra'])
      expect(view).toContain(`argMax(tuple(\`${column}\`), _event_order).1 AS \`${column}\``);
    expect(view).toContain(
      'argMax(tuple(`message_id`), _event_order).1 AS `message_id`, argMax(tuple(`anonymous_id`), _event_order).1 AS `anonymous_id`, ',
    );
    expect(view).not.toContain('argMax(tuple(`user_id`)');
    expect(view).not.toContain('argMax(tuple(`traits`)');
    expect(view).toContain(
      'max(_event_order) AS newest_order FROM `account_a`.`users_rows` FINAL GROUP BY `user_id`) AS c',
    );
    expect(view).toContain('c.newest_order AS _event_order');
  });

  it('keeps per trait key the value and order of the newest event that has it, {} when none', () => {
    expect(view).toContain(
      "arrayJoin(JSONExtractKeysAndValuesRaw(ifNull(traits, '{}'))) AS kv, if(JSONHas(_trait_orders, kv.1), JSONExtractString(_trait_orders, kv.1), _event_order) AS ko FROM `account_a`.`users_rows` FINAL",
    );
    expect(view).toContain('SELECT `user_id`, kv.1 AS k, argMax(kv.2, ko) AS v, max(ko) AS o');
    expect(view).toContain('GROUP BY `user_id`, k');
    expect(view).toContain(
      "concat('{', arrayStringConcat(groupArray(concat(toJSONString(k), ':', v)), ','), '}') AS traits",
    );
    expect(view).toContain(
      "concat('{', arrayStringConcat(groupArray(concat(toJSONString(k), ':', toJSONString(o))), ','), '}') AS _trait_orders",
    );
    expect(view).toContain("if(t.traits = '', '{}', t.traits) AS traits");
    expect(view).toContain("if(t._trait_orders = '', '{}', t._trait_orders) AS _trait_orders");
    expect(view).toMatch(/LEFT JOIN \(.*\) AS t ON t\.`user_id` = c\.`user_id`$/);
  });

  it('has the columns of warehouseTables in order, then the two orders', () => {
    const list = view.slice(view.indexOf(' AS SELECT ') + 11, view.indexOf(' FROM (SELECT'));
    const names = [...list.matchAll(/ AS `?(\w+)`?(, |$)/g)].map((m) => m[1]);
    expect(names).toEqual([...Object.keys(warehouseTables.users), '_event_order', '_trait_orders']);
  });
});

describe('keyList', () => {
  it('quotes each key in a parenthesized list, never an empty one', () => {
    expect(keyList(['a', "it's", 'back\\slash'])).toBe("('a', 'it\\'s', 'back\\\\slash')");
    expect(keyList(['only'])).toBe("('only')");
    expect(keyList([])).toBe("('')");
  });
});
