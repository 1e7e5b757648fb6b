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

/** One row per id: traits merged (later keys win), every other column from the latest row. */
export function mergeById(rows: readonly Record<string, unknown>[], key: string): Record<string, unknown>[] {
  const merged = new Map<unknown, Record<string, unknown>>();
  for (const row of rows) {
    const previous = merged.get(row[key]);
    const traits = {
      ...((previous?.traits as object | undefined) ?? {}),
      ...((row.traits as object | undefined) ?? {}),
    };
    merged.set(row[key], { ...row, traits });
  }
  return [...merged.values()];
}

/** The rows to load into a table: as they are when keyed by message, merged by id otherwise. */
export const rowsToLoad = (
  rows: readonly Record<string, unknown>[],
  key: string,
): readonly Record<string, unknown>[] => (key === 'message_id' ? rows : mergeById(rows, key));

/** The names of the columns of type jsonb, which COPY text carries as JSON. */
export const jsonColumns = (types: Readonly<Record<string, string>>): Set<string> =>
  new Set(Object.entries(types).flatMap(([column, type]) => (type === 'jsonb' ? [column] : [])));
