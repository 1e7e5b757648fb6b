import { printParseErrorCode, visit } from 'jsonc-parser';
import { setOwn } from './event-content';

/**
 * JSON.parse, without the key corruption of V8 12.8 to 14.6 (Node 24 and 26; reported to
 * Node.js and V8 in June 2026, not fixed): once an object with a `"\\"` key has been parsed, a
 * later object of the same shape so far whose next key is escaped (`"\n"`, `"\""`, `"\r"`)
 * can get the key `"\\"` instead. One tenant's body could rename another tenant's trait; the
 * warehouse's generative test found it (a trait `"\n"` read back as `"\\"`).
 *
 * Only an escaped key is read wrongly, and an escape needs a backslash: a text without one goes
 * to the native parser. A text with one is read by jsonc-parser's scanner, strictly (no
 * comments, no trailing commas), into the same values JSON.parse would make: numbers by
 * Number(), every key an own data property (`__proto__` included), the last of duplicate keys.
 * Throws a SyntaxError for whatever JSON.parse refuses.
 */
export function parseJsonText(text: string): unknown {
  if (!text.includes('\\')) return JSON.parse(text);
  return parseWithoutKeyCache(text);
}

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
