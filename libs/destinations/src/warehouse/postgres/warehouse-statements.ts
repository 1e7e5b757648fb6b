import { eventOrderSql, messageIdOfOrder } from '../event-order';
import { quoteIdent } from './warehouse-ddl';

// The SQL text the warehouse writer sends: pure, so that what it names (schema, table, columns,
// conflict key) is checked without a database. Schema and column names reach SQL only quoted.

/** An account's schema name (warehouseSchemaFor): anything else is refused before any SQL. */
const schemaName = /^[a-z_][a-z0-9_]{0,62}$/;

export const isWarehouseSchemaName = (schema: string): boolean => schemaName.test(schema);

/** `COPY target (columns) FROM STDIN`. */
export const copyStatement = (target: string, columns: readonly string[]): string =>
  `COPY ${target} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`;

/**
 * The INSERT of a batch's rows into the account's table, the rows sent as one JSON array
 * parameter ($1) and read as the table's own row type (json_populate_recordset): each value
 * takes its column's type, so a value PostgreSQL refuses fails the statement as data (class 22),
 * and a missing key fails it at the NOT NULL of the key. Nothing is created in the session for
 * it (no staging table), so a load works behind PgBouncer in transaction mode, where the next
 * transaction may run on another server connection. Events and aliases (keyed by message_id)
 * keep the row already there. Users and groups never roll back: see orderedMerge.
 */
export function upsertFromJson(
  schema: string,
  table: string,
  columns: readonly string[],
  key: string,
): string {
  const target = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const onConflict = key === 'message_id' ? 'DO NOTHING' : orderedMerge('stored', columns, key);
  const list = columns.map(quoteIdent).join(', ');
  // In key order, so that two batches loaded at once (WAREHOUSE_PARTITIONS_CONCURRENTLY) take
  // their row locks in the same order and wait for each other instead of deadlocking.
  return `INSERT INTO ${target} AS stored (${list}) SELECT ${list} FROM json_populate_recordset(NULL::${target}, $1::json) ORDER BY ${quoteIdent(key)} ON CONFLICT (${quoteIdent(key)}) ${onConflict}`;
}

/**
 * The update of a stored user or group by an incoming one (folded by mergeById, with its orders):
 * the columns of the newer of the two events, and per trait key the value whose event is newer;
 * `_event_order` and `_trait_orders` keep the winners' orders. Taking the newest per column and
 * per key is commutative, so any order and split of the same events gives the same row. A row
 * stored before orders were kept counts as its own event's order, for each of its traits too.
 * Nothing newer (the same events again, or only older ones), or the row's own event again: no
 * update, the row is a duplicate.
 */
export function orderedMerge(
  /** The alias of the stored row. */
  target: string,
  columns: readonly string[],
  key: string,
): string {
  const storedOrder = `COALESCE(${target}._event_order, ${eventOrderSql(target)})`;
  // The row's own event again (a client's retry reaches ingestion with a later received_at)
  // changes nothing, as the same message id in events does: neither its columns nor, below, the
  // traits it set. Its other traits may still lose to the events folded in with it.
  const sameEvent = `${target}.message_id IS NOT DISTINCT FROM EXCLUDED.message_id`;
  const newer = `(EXCLUDED._event_order > ${storedOrder} AND NOT ${sameEvent})`;
  const storedKeyOrder = `CASE WHEN ${target}.traits ? n.key THEN COALESCE(${target}._trait_orders ->> n.key, ${storedOrder}) END`;
  const stagedKeyOrder = `COALESCE(EXCLUDED._trait_orders ->> n.key, EXCLUDED._event_order)`;
  // A key is won by a newer order of another event than the stored one's and than the row's own.
  const stagedMessage = messageIdOfOrder(stagedKeyOrder);
  const keyWins = `COALESCE(${stagedKeyOrder} COLLATE "C" > (${storedKeyOrder}) COLLATE "C" AND ${stagedMessage} IS DISTINCT FROM ${messageIdOfOrder(`(${storedKeyOrder})`)}, true) AND ${stagedMessage} IS DISTINCT FROM ${target}.message_id`;
  const newKeys = (value: string) =>
    `COALESCE((SELECT jsonb_object_agg(n.key, ${value}) FROM jsonb_each(COALESCE(EXCLUDED.traits, '{}'::jsonb)) n WHERE ${keyWins}), '{}'::jsonb)`;
  const storedKeyOrders = `COALESCE(${target}._trait_orders, CASE WHEN jsonb_typeof(${target}.traits) = 'object' THEN (SELECT jsonb_object_agg(k, ${storedOrder}) FROM jsonb_object_keys(${target}.traits) k) END, '{}'::jsonb)`;
  const assignments = columns
    .filter((c) => c !== key)
    .map((c) => {
      if (c === 'traits') return `traits = COALESCE(${target}.traits, '{}'::jsonb) || ${newKeys('n.value')}`;
      if (c === '_trait_orders')
        return `_trait_orders = ${storedKeyOrders} || ${newKeys(`to_jsonb(${stagedKeyOrder})`)}`;
      if (c === '_event_order')
        return `_event_order = CASE WHEN ${newer} THEN EXCLUDED._event_order ELSE ${storedOrder} END`;
      return `${quoteIdent(c)} = CASE WHEN ${newer} THEN EXCLUDED.${quoteIdent(c)} ELSE ${target}.${quoteIdent(c)} END`;
    });
  const anyKeyWins = `EXISTS (SELECT 1 FROM jsonb_each(COALESCE(EXCLUDED.traits, '{}'::jsonb)) n WHERE ${keyWins})`;
  return `DO UPDATE SET ${assignments.join(', ')} WHERE ${newer} OR ${anyKeyWins}`;
}
