// Which of two events about one user or group is newer: ordered by (timestamp, received_at,
// message_id), a missing timestamp oldest. The order is carried as one text, the ordering key,
// that compares byte by byte (PostgreSQL's COLLATE "C") exactly as the tuple does, so that the
// loader's SQL and the batch's fold in JavaScript agree on every pair.

/**
 * Milliseconds are shifted by this to be positive over the whole range of a JavaScript Date
 * (and of PostgreSQL's timestamptz), then written with a fixed width: 17 digits. The sum passes
 * 2^53 after the year 13,600, so it is a BigInt (PostgreSQL's is a bigint).
 */
const shift = 8_640_000_000_000_001n;
const width = 17;
const missing = '0'.repeat(width);

function instantPart(value: unknown): string {
  const ms =
    value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  // A value that is not a time is a row PostgreSQL refuses anyway; it sorts as a missing one.
  return Number.isFinite(ms) ? String(BigInt(ms) + shift).padStart(width, '0') : missing;
}

// In a /u pattern a pair of surrogates is one code point, so only a lone one matches.
const loneSurrogate = /\p{Cs}/gu;

/**
 * The ordering key of a row's event. The message id is last and unpadded: the two times before
 * it have a fixed width, so a longer id never reaches into them. PostgreSQL stores text as
 * UTF-8, which has no lone surrogates: they are replaced as the COPY's encoding replaces them.
 */
export function eventOrderOf(row: Readonly<Record<string, unknown>>): string {
  const messageId = typeof row.message_id === 'string' ? row.message_id.replace(loneSurrogate, '\uFFFD') : '';
  return `${instantPart(row.timestamp)}.${instantPart(row.received_at)}.${messageId}`;
}

/**
 * Compares two ordering keys as PostgreSQL compares them under COLLATE "C" (UTF-8 bytes, that is
 * code points). JavaScript's `<` compares UTF-16 code units, which puts U+E000..U+FFFF after
 * the surrogates of the characters above U+FFFF; the shift below restores code point order.
 */
export function compareEventOrders(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i += 1) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

const codePointRank = (unit: number): number =>
  unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;

/**
 * The SQL of `eventOrderOf` for a row already stored (`alias` is the table's alias): for rows
 * written before their orders were kept. Times are cut to the millisecond like a JavaScript
 * Date; infinite ones sort as missing, as an unparseable time does in eventOrderOf.
 */
export function eventOrderSql(alias: string): string {
  const instant = (column: string) =>
    `COALESCE(CASE WHEN isfinite(${alias}.${column}) THEN lpad((floor(extract(epoch FROM ${alias}.${column}) * 1000)::bigint + ${shift})::text, ${width}, '0') END, '${missing}')`;
  return `(${instant('"timestamp"')} || '.' || ${instant('received_at')} || '.' || COALESCE(${alias}.message_id, '')) COLLATE "C"`;
}

/**
 * The SQL of the message id inside an ordering key (`expression`, text): what follows the two
 * fixed-width instants and their dots.
 */
export function messageIdOfOrder(expression: string): string {
  return `substr(${expression}, ${2 * width + 3})`;
}
