// Privacy benchmark: erasing regulated subjects from one account's warehouse tables (docs/privacy.md),
// on PostgreSQL and on ClickHouse (a chdb test server the bench starts; needs the built libs).
// One account holds N events of U users (plus one users row each, an alias for every tenth
// user and a hundred groups), generated and bulk-loaded by the server itself (INSERT ... SELECT);
// then 1 subject is erased, then 1,000 subjects in one call sequence, each as a regulation
// does it: the dry run (countSubjectRows), eraseSubjects until it says nothing remains, and
// purgeErased. Printed per phase: time, rows erased, calls, what the server read (PostgreSQL:
// its statistics for the account's tables, tuples fetched and buffers; ClickHouse: read_rows
// of each statement's X-ClickHouse-Summary), and the write latency of a second account on the
// same warehouse meanwhile (writeRows of 10 events in a loop, through an engine of its own, as
// a delivery process writes): the other accounts' delivery lag.
//   node tools/bench/privacy.js [events=1000000] [users=10000] [--engine=postgres,clickhouse] [--max-rows=5000]
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const root = path.join(__dirname, '../..');
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/delivery/dist')] }));
const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
const { normalizeEvent, validateEvent } = lib('@pipeline/events');
const { warehouseSchemaFor } = lib('@pipeline/tenancy');
const { PostgresEngine, ClickHouseEngine, directClickHouseClient, defaultWarehouseTimeouts } =
  lib('@pipeline/destinations');
const destinationsTesting = () => require(path.join(root, 'libs/destinations/dist/testing'));
const { Client } = require(require.resolve('pg', { paths: [path.join(root, 'libs/destinations')] }));

const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const total = Number(args[0] ?? 1_000_000);
const users = Number(args[1] ?? 10_000);
const flag = (name, fallback) =>
  (flags.find((f) => f.startsWith(`--${name}=`)) ?? `--${name}=${fallback}`).split('=')[1];
const engineNames = flag('engine', 'postgres,clickhouse').split(',');
const maxRows = Number(flag('max-rows', 5000));
for (const name of engineNames)
  if (!['postgres', 'clickhouse'].includes(name))
    throw new Error(`--engine takes postgres and clickhouse, not ${name}`);
if (users < 2000) throw new Error('users must be at least 2000: the second phase erases 1,000 of them');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const options = { timeouts: defaultWarehouseTimeouts, poolMax: 4, idleTimeoutMs: 10_000 };
const seedChunk = 100_000;
const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;

const phases = [
  { label: '1 subject', userIds: ['user-7'] },
  { label: '1,000 subjects', userIds: Array.from({ length: 1000 }, (_, i) => `user-${1000 + i}`) },
];

/** Writes 10 events at a time into another account until stopped; latencies by phase. */
function otherAccountWriter(engine) {
  const account = { accountId: randomUUID(), schema: `bench_other_${Date.now()}` };
  let running = true;
  let n = 0;
  let samples = [];
  const receipt = { ip: '198.51.100.1', userAgent: 'bench', receivedAt: new Date() };
  const batch = () =>
    Array.from({ length: 10 }, () => {
      n += 1;
      const result = validateEvent({
        type: 'track',
        event: 'Other',
        messageId: `o-${n}`,
        anonymousId: `a-${n % 50}`,
        timestamp: new Date().toISOString(),
      });
      if (!result.valid) throw new Error(JSON.stringify(result.errors));
      return normalizeEvent(result.event, { ...receipt, receivedAt: new Date() });
    });
  const loop = (async () => {
    await engine.ensureAccount(account);
    while (running) {
      const rows = batch();
      const started = performance.now();
      await engine.writeRows(account, rows);
      samples.push(performance.now() - started);
      await sleep(20);
    }
  })();
  return {
    /** The latencies since the last call, sorted. */
    take: () => {
      const taken = samples.sort((a, b) => a - b);
      samples = [];
      return taken;
    },
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

const latencyText = (sorted) =>
  sorted.length === 0
    ? 'no write finished'
    : `p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms, max ${sorted[sorted.length - 1].toFixed(0)} ms (${sorted.length} writes)`;

const countsText = (c) => `events ${c.events}, users ${c.users}, groups ${c.groups}, aliases ${c.aliases}`;
const sum = (a, b) => ({
  events: a.events + b.events,
  users: a.users + b.users,
  groups: a.groups + b.groups,
  aliases: a.aliases + b.aliases,
});

/** Users, aliases and groups through the engine's own writer (small next to the events). */
async function writeProfiles(engine, account) {
  const receipt = { ip: '198.51.100.1', userAgent: 'bench', receivedAt: new Date('2026-03-01T12:00:00Z') };
  const rows = [];
  const row = (event) => {
    const result = validateEvent({
      anonymousId: `anon-${event.userId}`,
      timestamp: '2026-03-01T11:00:00Z',
      ...event,
    });
    if (!result.valid) throw new Error(JSON.stringify(result.errors));
    rows.push(normalizeEvent(result.event, receipt));
  };
  for (let u = 0; u < users; u += 1) {
    row({
      type: 'identify',
      messageId: `identify-${u}`,
      userId: `user-${u}`,
      traits: { email: `user-${u}@example.com`, plan: 'pro' },
    });
    if (u % 10 === 0)
      row({ type: 'alias', messageId: `alias-${u}`, userId: `user-${u}`, previousId: `anon-old-${u}` });
    if (u % 100 === 0)
      row({
        type: 'group',
        messageId: `group-${u}`,
        userId: `user-${u}`,
        groupId: `group-${u / 100}`,
        traits: { name: `Company ${u}` },
      });
  }
  for (let i = 0; i < rows.length; i += 5000) await engine.writeRows(account, rows.slice(i, i + 5000));
}

/** PostgreSQL: a scratch database, events generated by the server into the account's table. */
async function postgresTarget() {
  const db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'bench privacy');
  const { warehouseConnectionOf } = destinationsTesting();
  const client = new Client({ connectionString: db.url });
  await client.connect();
  const open = () => new PostgresEngine(warehouseConnectionOf(db.url, 'bench-pg'), options);
  return {
    open,
    seed: async (engine, account) => {
      await engine.ensureAccount(account);
      const schema = `"${account.schema}"`;
      await client.query(
        `INSERT INTO ${schema}.events (message_id, anonymous_id, user_id, timestamp, original_timestamp, received_at,
                                       type, event, properties, context_ip, context_user_agent, context_page_url)
         SELECT 'event-' || i, 'anon-user-' || (i % $2), 'user-' || (i % $2),
                t, t, t + interval '1 second', 'track', 'Product Viewed',
                jsonb_build_object('sku', 'sku-' || (i % 997), 'price', i % 100),
                '198.51.100.' || (i % 250), 'Mozilla/5.0 bench', 'https://shop.example/p/' || (i % 997)
           FROM generate_series(1, $1) i, LATERAL (SELECT timestamptz '2026-01-01' + i * interval '1 second' AS t) s`,
        [total, users],
      );
      await writeProfiles(engine, account);
      await client.query(`ANALYZE ${schema}.events`);
    },
    /** What the server read for the account's tables: its statistics, flushed when the engine closed. */
    readStats: async (schema) => {
      await client.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await client.query(
        `SELECT COALESCE(sum(s.seq_tup_read), 0)::bigint AS seq_read, COALESCE(sum(s.idx_tup_fetch), 0)::bigint AS idx_fetched,
                COALESCE(sum(io.heap_blks_hit + io.heap_blks_read + COALESCE(io.idx_blks_hit, 0) + COALESCE(io.idx_blks_read, 0)), 0)::bigint AS blocks
           FROM pg_stat_user_tables s JOIN pg_statio_user_tables io USING (relid) WHERE s.schemaname = $1`,
        [schema],
      );
      return {
        seqRead: Number(rows[0].seq_read),
        idxFetched: Number(rows[0].idx_fetched),
        blocks: Number(rows[0].blocks),
      };
    },
    readText: (before, after) =>
      `server read ${after.seqRead - before.seqRead} tuples by sequential scan, ${after.idxFetched - before.idxFetched} fetched through indexes, ${after.blocks - before.blocks} blocks (8 KiB, cache or disk)`,
    close: async () => {
      await client.end();
      await db.drop();
    },
  };
}

/** ClickHouse: a chdb test server; events generated by the server into the account's table. */
async function clickhouseTarget() {
  const { startClickHouseWarehouse, clickhouseConnectionOf } = destinationsTesting();
  const warehouse = await startClickHouseWarehouse();
  // Every statement's summary as the server sent it: what it read.
  let reads = [];
  const metered = (connection, settings) => {
    const client = directClickHouseClient(connection, settings);
    return new Proxy(client, {
      get(target, prop) {
        const value = target[prop];
        if (prop === 'query')
          return async (params) => {
            const result = await target.query(params);
            const summary = JSON.parse(result.response_headers['x-clickhouse-summary'] ?? '{}');
            reads.push({ query: params.query, rows: Number(summary.read_rows ?? 0) });
            return result;
          };
        if (prop === 'command')
          return async (params) => {
            const result = await target.command(params);
            reads.push({ query: params.query, rows: Number(result.summary?.read_rows ?? 0) });
            return result;
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  const open = () =>
    new ClickHouseEngine(clickhouseConnectionOf(warehouse.server, 'bench-ch'), {
      ...options,
      connect: metered,
    });
  return {
    open,
    seed: async (engine, account) => {
      await engine.ensureAccount(account);
      // In chunks: one statement of a million rows outlasts the client's request timeout here.
      for (let first = 1; first <= total; first += seedChunk) {
        await warehouse.client.command({
          query: `INSERT INTO \`${account.schema}\`.events (message_id, anonymous_id, user_id, timestamp, original_timestamp, received_at,
                                         type, event, properties, context_ip, context_user_agent, context_page_url, _version)
                  SELECT concat('event-', toString(number)), concat('anon-user-', toString(number % ${users})),
                         concat('user-', toString(number % ${users})),
                         formatDateTime(toDateTime64('2026-01-01 00:00:00', 6, 'UTC') + toIntervalSecond(number), '%Y-%m-%dT%H:%i:%S.%fZ'),
                         formatDateTime(toDateTime64('2026-01-01 00:00:00', 6, 'UTC') + toIntervalSecond(number), '%Y-%m-%dT%H:%i:%S.%fZ'),
                         toDateTime64('2026-01-01 00:00:01', 6, 'UTC') + toIntervalSecond(number), 'track', 'Product Viewed',
                         concat('{"sku":"sku-', toString(number % 997), '","price":', toString(number % 100), '}'),
                         concat('198.51.100.', toString(number % 250)), 'Mozilla/5.0 bench',
                         concat('https://shop.example/p/', toString(number % 997)),
                         toUInt64(9007199254740991 - toUnixTimestamp64Milli(toDateTime64('2026-01-01 00:00:01', 3, 'UTC') + toIntervalSecond(number)))
                    FROM numbers(${first}, ${Math.min(seedChunk, total - first + 1)})`,
          clickhouse_settings: { async_insert: 0 },
        });
      }
      await writeProfiles(engine, account);
    },
    readStats: async (schema) => {
      const taken = reads;
      reads = [];
      // chdb reports no rows read for a DELETE, nor for a scan in a subquery, and has no
      // query_log: the server's own estimate of what a scan by an id column reads instead.
      const estimates = [];
      for (const table of ['events', 'users_rows', 'groups_rows', 'aliases']) {
        const result = await warehouse.client.query({
          query: `EXPLAIN ESTIMATE SELECT count() FROM \`${schema}\`.\`${table}\` WHERE user_id IN ('user-1') OR anonymous_id IN ('anon-1')`,
          format: 'JSONEachRow',
        });
        const rows = await result.json();
        estimates.push(`${table} ${rows.reduce((n, r) => n + Number(r.rows), 0)}`);
      }
      return { statements: taken, estimates };
    },
    readText: (_before, after) => {
      const byKind = {};
      for (const { query } of after.statements) {
        const kind = query.trim().startsWith('DELETE')
          ? 'DELETE'
          : query.includes('APPLY DELETED MASK')
            ? 'APPLY DELETED MASK'
            : /count\(\)/.test(query) && query.includes('_regulated_ids')
              ? 'count (dry run, and one per erase call)'
              : null;
        if (kind) byKind[kind] = (byKind[kind] ?? 0) + 1;
      }
      return `statements: ${Object.entries(byKind)
        .map(([kind, n]) => `${kind} x${n}`)
        .join(
          ', ',
        )}; a scan by id reads (EXPLAIN ESTIMATE, rows after the erasure): ${after.estimates.join(', ')}`;
    },
    close: () => warehouse.destroy(),
  };
}

async function bench(name) {
  const target = name === 'postgres' ? await postgresTarget() : await clickhouseTarget();
  try {
    const account = { accountId: randomUUID(), schema: warehouseSchemaFor(randomUUID()) };
    const seeder = target.open();
    const seedStarted = Date.now();
    await target.seed(seeder, account);
    await seeder.close();
    console.log(
      `[${name}] seeded ${total} events of ${users} users (+ ${users} users rows, ${users / 10} aliases, ${users / 100} groups) in ${seconds(Date.now() - seedStarted)}`,
    );
    const writerEngine = target.open();
    const other = otherAccountWriter(writerEngine);
    await sleep(3000);
    console.log(`[${name}] other account's writes before any erasure: ${latencyText(other.take())}`);
    for (const phase of phases) {
      const subjects = { userIds: phase.userIds, anonymousIds: [] };
      // An engine per phase, closed at its end: PostgreSQL backends flush their statistics when they exit.
      const engine = target.open();
      const before = await target.readStats(account.schema);
      other.take();
      let started = performance.now();
      const counted = await engine.countSubjectRows(account, subjects);
      const dryRunMs = performance.now() - started;
      started = performance.now();
      let erased = { events: 0, users: 0, groups: 0, aliases: 0 };
      let calls = 0;
      for (let more = true; more; calls += 1) {
        const result = await engine.eraseSubjects(account, subjects, { maxRows });
        erased = sum(erased, result.erased);
        more = result.more;
      }
      const eraseMs = performance.now() - started;
      const duringErase = other.take();
      started = performance.now();
      await engine.purgeErased(account);
      const purgeMs = performance.now() - started;
      const duringPurge = other.take();
      await engine.close();
      await sleep(500);
      const after = await target.readStats(account.schema);
      const left = await (async () => {
        const check = target.open();
        try {
          return await check.countSubjectRows(account, subjects);
        } finally {
          await check.close();
        }
      })();
      console.log(`[${name}] ${phase.label}: dry run ${dryRunMs.toFixed(0)} ms (${countsText(counted)})`);
      console.log(
        `[${name}] ${phase.label}: erased in ${seconds(eraseMs)}, ${calls} call(s)${name === 'postgres' ? ` of at most ${maxRows} rows per statement` : ''}: ${countsText(erased)}; left afterwards: ${countsText(left)}`,
      );
      console.log(
        `[${name}] ${phase.label}: purge (${name === 'postgres' ? 'VACUUM' : 'APPLY DELETED MASK'}) ${seconds(purgeMs)}`,
      );
      console.log(`[${name}] ${phase.label}: ${target.readText(before, after)}`);
      console.log(
        `[${name}] ${phase.label}: other account's writes during the erasure: ${latencyText(duringErase)}`,
      );
      console.log(
        `[${name}] ${phase.label}: other account's writes during the purge: ${latencyText(duringPurge)}`,
      );
    }
    await other.stop();
    await writerEngine.close();
  } finally {
    await target.close();
  }
}

(async () => {
  for (const name of engineNames) await bench(name);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
