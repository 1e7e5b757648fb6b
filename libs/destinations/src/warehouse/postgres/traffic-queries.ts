import type { TrafficWindow, WarehouseTableName } from '../warehouse-engine';
import { quoteIdent } from './warehouse-ddl';

// The SQL of the traffic queries (tracking plans from traffic, docs/tracking-plans.md "Plans from
// traffic"). Every one starts from the same ranked window, so the names a profile or a sample
// covers are exactly the names traffic_names answered: the most frequent first, ties by type and
// name in code-unit order (COLLATE "C"), so two calls over the same rows agree.

/** The call type and name of a row of each table (a users row is what identify calls left). */
const callOf: Record<WarehouseTableName, { type: string; name: string; doc: string | null }> = {
  events: {
    type: 't.type',
    name: "CASE WHEN t.type = 'track' THEN t.event ELSE t.name END",
    doc: 't.properties',
  },
  users: { type: "'identify'::text", name: 'NULL::text', doc: 't.traits' },
  groups: { type: "'group'::text", name: 'NULL::text', doc: 't.traits' },
  aliases: { type: "'alias'::text", name: 'NULL::text', doc: null },
};

/**
 * `windowed` (every row of the window with its call type, name and time) and `names` (the
 * `maxNames` most frequent names, with the count of all names). Parameters: $1 since, $2 maxNames.
 */
function rankedWindow(schema: string, table: WarehouseTableName): string {
  const call = callOf[table];
  return `windowed AS (
      SELECT t AS _row, ${call.type} AS _type, ${call.name} AS _name, ${call.doc ?? "'{}'::jsonb"} AS _doc,
             t.message_id AS _id, COALESCE(t.timestamp, t.received_at) AS _at
        FROM ${schema}.${quoteIdent(table)} t
       WHERE COALESCE(t.timestamp, t.received_at) > $1),
    names AS (
      SELECT _type, _name, count(*) AS n, min(_at) AS first_seen, max(_at) AS last_seen,
             count(*) OVER () AS distinct_names
        FROM windowed GROUP BY _type, _name
       ORDER BY count(*) DESC, _type COLLATE "C", _name COLLATE "C" NULLS FIRST
       LIMIT $2),
    sampled AS (
      SELECT w.*, row_number() OVER (PARTITION BY w._type, w._name ORDER BY w._at DESC, w._id COLLATE "C") AS _rn,
             n.n AS _n
        FROM windowed w JOIN names n ON n._type = w._type AND n._name IS NOT DISTINCT FROM w._name)`;
}

export function trafficNamesStatement(
  schema: string,
  window: TrafficWindow,
): { sql: string; values: unknown[] } {
  return {
    sql: `WITH ${rankedWindow(schema, window.table)}
      SELECT _type AS type, _name AS name, n AS count, first_seen, last_seen, distinct_names FROM names
       ORDER BY n DESC, _type COLLATE "C", _name COLLATE "C" NULLS FIRST`,
    // `sampled` is unused here; PostgreSQL does not compute a CTE nobody reads.
    values: [window.since, window.maxNames],
  };
}

/** Whole numbers are `integer`, as ajv's integer takes them (1.0 included). */
const jsonTypeOf = (value: string) =>
  `CASE WHEN jsonb_typeof(${value}) = 'number' AND (${value})::numeric = trunc((${value})::numeric)
        THEN 'integer' ELSE jsonb_typeof(${value}) END`;

export function trafficProfileStatement(
  schema: string,
  window: TrafficWindow & { perName: number; maxValues: number; maxValueLength: number; maxRows: number },
): { sql: string; values: unknown[] } {
  return {
    sql: `WITH ${rankedWindow(schema, window.table)}
      SELECT s._type AS type, s._name AS name, p.key AS property, ${jsonTypeOf('p.value')} AS json_type,
             count(*) AS count,
             CASE WHEN min(jsonb_typeof(p.value)) = 'string' AND count(DISTINCT p.value) <= $4
                       AND max(length(p.value #>> '{}')) <= $6
                  THEN array_agg(DISTINCT p.value #>> '{}') END AS strings
        FROM sampled s
       CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(s._doc) = 'object' THEN s._doc ELSE '{}'::jsonb END) p
       WHERE s._rn <= $3
       GROUP BY 1, 2, 3, 4
       ORDER BY s._type COLLATE "C", s._name COLLATE "C" NULLS FIRST, p.key COLLATE "C", 4
       LIMIT $5`,
    values: [
      window.since,
      window.maxNames,
      window.perName,
      window.maxValues,
      window.maxRows,
      window.maxValueLength,
    ],
  };
}

export function trafficRowsStatement(
  schema: string,
  window: TrafficWindow & { perName: number; maxRows: number },
): { sql: string; values: unknown[] } {
  return {
    // Round robin over the names (the first row of each, then the second...): a cap on the rows
    // shares them between names rather than filling up with the most frequent one.
    sql: `WITH ${rankedWindow(schema, window.table)}
      SELECT to_jsonb(s._row) AS row FROM sampled s
       WHERE s._rn <= $3
       ORDER BY s._rn, s._n DESC, s._type COLLATE "C", s._name COLLATE "C" NULLS FIRST
       LIMIT $4`,
    values: [window.since, window.maxNames, window.perName, window.maxRows],
  };
}
