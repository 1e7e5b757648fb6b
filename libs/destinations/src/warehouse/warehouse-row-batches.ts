import { compareEventOrders, eventOrderOf } from './event-order';

// How a batch's rows are grouped before they are loaded: per table, and for the tables keyed by
// id (users, groups) one row per id, since PostgreSQL cannot upsert a row twice in one statement.

/** A row for one warehouse table (WarehouseRow's shape). */
export interface TableRow<Table extends string = string> {
  table: Table;
  row: Record<string, unknown>;
}

/** The rows of each table, in the order the tables first appear and the rows came. */
export function rowsByTable<Table extends string>(
  rows: readonly TableRow<Table>[],
): Map<Table, Record<string, unknown>[]> {
  const byTable = new Map<Table, Record<string, unknown>[]>();
  for (const { table, row } of rows) {
    const tableRows = byTable.get(table);
    if (tableRows) tableRows.push(row);
    else byTable.set(table, [row]);
  }
  return byTable;
}

const traitsOf = (row: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const traits = row.traits;
  return traits !== null && typeof traits === 'object' && !Array.isArray(traits)
    ? (traits as Record<string, unknown>)
    : {};
};

/**
 * One row per id, by the rule the load applies to a stored row (upsertFromStaging): the columns
 * of the newest event by ordering key (eventOrderOf), and each trait key's value from the newest
 * event that has that key. The row carries the orders it was folded from (`_event_order`,
 * `_trait_orders`, the columns of orderColumns), so that the load compares key by key. Equal
 * orders (the same event twice) keep the first, as the load keeps what is stored.
 */
export function mergeById(rows: readonly Record<string, unknown>[], key: string): Record<string, unknown>[] {
  const merged = new Map<
    unknown,
    { row: Record<string, unknown>; order: string; traits: Map<string, { value: unknown; order: string }> }
  >();
  for (const row of rows) {
    const order = eventOrderOf(row);
    const entry = merged.get(row[key]);
    if (!entry) {
      const traits = new Map(Object.entries(traitsOf(row)).map(([k, value]) => [k, { value, order }]));
      merged.set(row[key], { row, order, traits });
      continue;
    }
    if (compareEventOrders(order, entry.order) > 0) {
      entry.row = row;
      entry.order = order;
    }
    for (const [k, value] of Object.entries(traitsOf(row))) {
      const current = entry.traits.get(k);
      if (!current || compareEventOrders(order, current.order) > 0) entry.traits.set(k, { value, order });
    }
  }
  // Object.fromEntries defines each key as data, so a trait named __proto__ stays a trait.
  return [...merged.values()].map(({ row, order, traits }) => ({
    ...row,
    traits: Object.fromEntries([...traits].map(([k, { value }]) => [k, value])),
    _event_order: order,
    _trait_orders: Object.fromEntries([...traits].map(([k, { order: traitOrder }]) => [k, traitOrder])),
  }));
}

/** The rows to load into a table: as they are when keyed by message, merged by id otherwise. */
export const rowsToLoad = (
  rows: readonly Record<string, unknown>[],
  key: string,
): readonly Record<string, unknown>[] => (key === 'message_id' ? rows : mergeById(rows, key));

/** The names of the columns of type jsonb, which COPY text carries as JSON. */
export const jsonColumns = (types: Readonly<Record<string, string>>): Set<string> =>
  new Set(Object.entries(types).flatMap(([column, type]) => (type === 'jsonb' ? [column] : [])));
