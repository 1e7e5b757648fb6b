import { printParseErrorCode, visit } from 'jsonc-parser';
import { setOwn } from './event-content';

/**
 * JSON.parse, without the key corruption of V8 12.8 to 14.6 (Node 24 and 26; reported to
 * Node.js and V8 in June 2026, not fixed): once an object with a `"\\"` key has been parsed, a
 * later object of the same shape so far whose next key is escaped (`"\n"`, `"\""`, `"\r"`)
 * can get the key `"\\"` instead. One tenant's body could rename another tenant's trait; the
 * warehouse's generative test found it (a trait `"\n"` read back as `"\\"`).
 *
 * Only an escaped key is read wrongly, and an escape needs a backslash: a text without an
 * escaped key (backslashes in string values only, as a tenant's `"\n"` in a property value)
 * goes to the native parser. A text with one is read by jsonc-parser's scanner, strictly (no
 * comments, no trailing commas), into the same values JSON.parse would make: numbers by
 * Number(), every key an own data property (`__proto__` included), the last of duplicate keys.
 * Throws a SyntaxError for whatever JSON.parse refuses.
 */
export function parseJsonText(text: string): unknown {
  if (!hasEscapedKey(text)) return JSON.parse(text);
  return parseWithoutKeyCache(text);
}

const COLON = 58;

/**
 * Whether a string with an escape in it is followed by a colon: in a JSON text, exactly a key
 * with an escape. One pass, jumping between quotes and backslashes with indexOf (a few ms for
 * 2 MB): the scanner costs 3 to 7 times JSON.parse, and before this every text with a backslash
 * anywhere paid it, before its write key was looked at. In a text that is not JSON the answer
 * may be wrong, and does not matter: both parsers refuse it.
 */
export function hasEscapedKey(text: string): boolean {
  // The next backslash and the next quote at or after where the scan is: each indexOf starts
  // past the last one found, so the whole scan reads the text about twice, whatever its shape.
  let backslash = text.indexOf('\\');
  if (backslash === -1) return false;
  let quote: number;
  let at = 0;
  for (;;) {
    // From the start, then from just past the quote that closed the last string.
    quote = text.indexOf('"', at);
    if (quote === -1) return false;
    // A string opens at `quote`; find the quote that closes it, skipping escaped characters.
    at = quote + 1;
    let escaped = false;
    for (;;) {
      if (quote < at) quote = text.indexOf('"', at);
      if (quote === -1) return false;
      if (backslash !== -1 && backslash < at) backslash = text.indexOf('\\', at);
      if (backslash === -1 || backslash > quote) break;
      escaped = true;
      at = backslash + 2;
    }
    // Past the end charCodeAt gives NaN, which is not a space: the loop needs no length check.
    let next = quote + 1;
    while (isJsonSpace(text.charCodeAt(next))) next += 1;
    if (escaped && text.charCodeAt(next) === COLON) return true;
    at = quote + 1;
  }
}

const isJsonSpace = (code: number) => code === 32 || code === 9 || code === 10 || code === 13;

type Container = Record<string, unknown> | unknown[];

/** Exported for its tests: the reading of texts with a backslash. */
export function parseWithoutKeyCache(text: string): unknown {
  let root: unknown;
  // The open objects and arrays; a property's key is set just before its value is read.
  const open: Container[] = [];
  let key = '';
  const place = (value: unknown) => {
    const parent = open[open.length - 1];
    if (parent === undefined) root = value;
    else if (Array.isArray(parent)) parent.push(value);
    else setOwn(parent, key, value);
  };
  const begin = (container: Container) => {
    place(container);
    open.push(container);
  };
  const end = () => {
    open.pop();
  };
  let failure: string | undefined;
  visit(
    text,
    {
      onObjectBegin: () => begin({}),
      onObjectProperty: (property) => {
        key = property;
      },
      onObjectEnd: end,
      onArrayBegin: () => begin([]),
      onArrayEnd: end,
      onLiteralValue: (value: unknown) => place(value),
      onError: (error, offset) => {
        failure ??= `${printParseErrorCode(error)} at position ${offset}`;
      },
    },
    // No comments, no trailing comma, and an empty text is an error: JSON's own grammar.
    { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false },
  );
  if (failure !== undefined) throw new SyntaxError(`invalid JSON: ${failure}`);
  return root;
}
