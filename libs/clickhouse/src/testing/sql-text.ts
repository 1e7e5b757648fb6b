// The little SQL the test server must understand without a parser: where a query's top-level
// words are (outside string literals, quoted names, comments and parentheses), so it can take
// a trailing `FORMAT X` off, add a `SETTINGS` clause where ClickHouse's grammar puts one, and
// find where an INSERT's inline data starts.

/** A word at parenthesis depth 0 outside literals and comments, with its offsets. */
export interface TopLevelWord {
  /** Upper case. */
  word: string;
  start: number;
  end: number;
}

const isWordChar = (c: string): boolean => /[A-Za-z0-9_]/.test(c);

/**
 * The top-level words of `sql` up to `stopAt` (the whole text by default). Strings ('...'),
 * quoted names ("..." and `...`) with backslash escapes and doubled quotes, `--` and `#!`
 * line comments and block comments are skipped.
 */
export function topLevelWords(sql: string, stopAt = sql.length): TopLevelWord[] {
  const words: TopLevelWord[] = [];
  let depth = 0;
  let i = 0;
  while (i < stopAt) {
    const c = sql[i] as string;
    if (c === "'" || c === '"' || c === '`') {
      i += 1;
      while (i < sql.length) {
        if (sql[i] === '\\') i += 2;
        else if (sql[i] === c && sql[i + 1] === c) i += 2;
        else if (sql[i] === c) break;
        else i += 1;
      }
      i += 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < sql.length && sql[i] !== '\n') i += 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close === -1 ? sql.length : close + 2;
    } else if (c === '(' || c === '[') {
      depth += 1;
      i += 1;
    } else if (c === ')' || c === ']') {
      depth = Math.max(0, depth - 1);
      i += 1;
    } else if (isWordChar(c)) {
      const start = i;
      while (i < sql.length && isWordChar(sql[i] as string)) i += 1;
      if (depth === 0) words.push({ word: sql.slice(start, i).toUpperCase(), start, end: i });
    } else i += 1;
  }
  return words;
}

/** The first word of a statement, upper case ('SELECT', 'INSERT', 'CREATE'...), or ''. */
export function statementKind(sql: string): string {
  return topLevelWords(sql)[0]?.word ?? '';
}

/** Statements that only read: allowed over GET and with readonly=1, as the server allows. */
export const READ_ONLY_KINDS: ReadonlySet<string> = new Set([
  'SELECT',
  'WITH',
  'SHOW',
  'DESCRIBE',
  'DESC',
  'EXISTS',
  'EXPLAIN',
]);

/**
 * A trailing `FORMAT <name>` (a `;` after it allowed) taken off a statement that is not an
 * INSERT: `{ sql, format }`, the format undefined when there is none.
 */
export function takeTrailingFormat(sql: string): { sql: string; format: string | undefined } {
  const words = topLevelWords(sql);
  const formatWord = words[words.length - 2];
  const name = words[words.length - 1];
  if (formatWord?.word !== 'FORMAT' || !name) return { sql, format: undefined };
  if (!/^\s*;?\s*$/.test(sql.slice(name.end))) return { sql, format: undefined };
  if (!/^\s+$/.test(sql.slice(formatWord.end, name.start))) return { sql, format: undefined };
  return { sql: sql.slice(0, formatWord.start).trimEnd(), format: sql.slice(name.start, name.end) };
}

/** Words that start a clause: after one of them, a SETTINGS before it is not the last clause. */
const CLAUSE_WORDS = new Set([
  'SELECT',
  'FROM',
  'WHERE',
  'PREWHERE',
  'GROUP',
  'HAVING',
  'ORDER',
  'LIMIT',
  'OFFSET',
  'UNION',
  'EXCEPT',
  'INTERSECT',
  'JOIN',
  'WINDOW',
  'QUALIFY',
  'FORMAT',
  'INTO',
]);

/**
 * A SELECT with `clause` (`k = v, ...`) added to its settings: appended to the SETTINGS clause
 * it already ends with, or as a new one at the end.
 */
export function withSelectSettings(sql: string, clause: string): string {
  if (clause === '') return sql;
  const body = sql.replace(/[\s;]+$/, '');
  const words = topLevelWords(body);
  let last = -1;
  words.forEach((w, index) => {
    if (w.word === 'SETTINGS') last = index;
  });
  const endsWithSettings = last !== -1 && !words.slice(last + 1).some((w) => CLAUSE_WORDS.has(w.word));
  return endsWithSettings ? `${body}, ${clause}` : `${body}\nSETTINGS ${clause}`;
}

/** An INSERT as the server reads it: what comes before its data, and the data. */
export interface InsertStatement {
  /** `db.table` or `table`, backticks removed. */
  table: string;
  columns: string[] | undefined;
  /** The statement's own `SETTINGS k = v, ...` text, or ''. */
  settings: string;
  /** The data format after FORMAT; undefined for VALUES or INSERT ... SELECT. */
  format: string | undefined;
  /** The text after `FORMAT <name>` and one whitespace character. */
  data: string;
}

const identifier = '(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)';
const insertHead = new RegExp(
  `^\\s*INSERT\\s+INTO\\s+(?:TABLE\\s+)?(${identifier}(?:\\.${identifier})?)\\s*(?:\\(([^)]*)\\))?\\s*(?:SETTINGS\\s+(.*?))?\\s*$`,
  'is',
);

const unquote = (name: string): string => name.trim().replace(/^`(.*)`$/, '$1');

/**
 * An `INSERT INTO t [(cols)] [SETTINGS ...] FORMAT X <data>` split into its parts, or undefined
 * for any other INSERT (VALUES, SELECT, FUNCTION...), which the server then runs as it is.
 */
export function parseInsert(sql: string): InsertStatement | undefined {
  const words = topLevelWords(sql);
  const format = words.find((w) => w.word === 'FORMAT');
  if (!format) return undefined;
  const name = words[words.indexOf(format) + 1];
  if (!name || !/^\s+$/.test(sql.slice(format.end, name.start))) return undefined;
  const head = insertHead.exec(sql.slice(0, format.start));
  if (!head) return undefined;
  const [, table, columns, settings] = head;
  let data = sql.slice(name.end);
  if (/^[ \t]*\r?\n/.test(data)) data = data.replace(/^[ \t]*\r?\n/, '');
  else data = data.replace(/^[ \t]/, '');
  return {
    table: (table as string).split('.').map(unquote).join('.'),
    columns: columns === undefined ? undefined : columns.split(',').map(unquote),
    settings: settings?.trim() ?? '',
    format: sql.slice(name.start, name.end),
    data,
  };
}

/** `k = v, k2 = 'x'` as an object of text values, or undefined when it is not that simple. */
export function parseSettingsClause(clause: string): Record<string, string> | undefined {
  const settings: Record<string, string> = {};
  if (clause.trim() === '') return settings;
  const pair = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*('(?:[^'\\]|\\.|'')*'|-?[0-9.]+|true|false)\s*(,|$)/iy;
  let index = 0;
  while (index < clause.length) {
    pair.lastIndex = index;
    const match = pair.exec(clause);
    if (!match) return undefined;
    const [whole, key, value] = match as unknown as [string, string, string];
    settings[key] = value.startsWith("'") ? decodeQuoted(value.slice(1, -1)) : value;
    index += whole.length;
    if (whole.length === 0) return undefined;
  }
  return settings;
}

function decodeQuoted(text: string): string {
  return text.replace(/''/g, "'").replace(/\\(.)/g, '$1');
}

/** A setting's value as a SQL literal: a number as it is, anything else a quoted string. */
export function settingLiteral(value: string): string {
  if (/^-?\d+(\.\d+)?$/.test(value)) return value;
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** `k = v, ...` for a SETTINGS clause. */
export function settingsClause(settings: Record<string, string>): string {
  return Object.entries(settings)
    .map(([key, value]) => `${key} = ${settingLiteral(value)}`)
    .join(', ');
}
