/**
 * Rows in PostgreSQL's COPY text format (tab-separated, `\N` for NULL, one row a line).
 *
 * Backslash, newline, carriage return and tab are escaped; every other character, Unicode
 * included, is sent as it is, except NUL. PostgreSQL text cannot hold a NUL; it is sent as the
 * escape `\000` rather than a raw byte (which line-reading COPY clients such as psql's `\copy`
 * cut a value at), and PostgreSQL refuses it with 22021 as it refuses a NUL in a bound parameter (in a
 * JSON column it arrives as `\u0000` and PostgreSQL answers 22P05): the row is then isolated and
 * dead-lettered like any other row PostgreSQL refuses as data.
 */

/** The text of a value PostgreSQL would refuse as data: reported with SQLSTATE 22000 like PostgreSQL's own. */
export class UnserializableValue extends Error {
  readonly code = '22000';
}

const needsEscape = /[\\\n\r\t\0]/;
const escapable = /[\\\n\r\t\0]/g;
// Three octal digits: a digit after the NUL is never read as part of the escape.
const escapes: Record<string, string> = {
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\u0000': '\\000',
};
const escapeChar = (c: string) => escapes[c] as string;

function escapeText(text: string): string {
  return needsEscape.test(text) ? text.replace(escapable, escapeChar) : text;
}

export function jsonbText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    // Too deep for JSON.stringify's stack, or a cycle: only a record that skipped the door.
    throw new UnserializableValue(`value cannot be serialized as JSON: ${(error as Error).message}`);
  }
}

/** A field as node-postgres would send it as a parameter: objects as JSON, the rest as their string. */
function fieldText(value: unknown, json: boolean): string {
  if (json || (typeof value === 'object' && !(value instanceof Date))) return jsonbText(value);
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

/**
 * The COPY text of `rows` for `columns` (in that order); `jsonColumns` are serialized as JSON.
 * Throws UnserializableValue for a value JSON cannot represent.
 */
export function copyText(
  rows: readonly Record<string, unknown>[],
  columns: readonly string[],
  jsonColumns: ReadonlySet<string>,
): string {
  const json = columns.map((column) => jsonColumns.has(column));
  let text = '';
  for (const row of rows) {
    for (let c = 0; c < columns.length; c += 1) {
      const value = row[columns[c] as string];
      if (c > 0) text += '\t';
      text += value === null || value === undefined ? '\\N' : escapeText(fieldText(value, json[c] === true));
    }
    text += '\n';
  }
  return text;
}
