// `param_<name>` URL parameters to chdb's server-side binding. A ClickHouse server reads a
// parameter's text in the escaped (TabSeparated) format of the placeholder's type. chdb's
// queryBindAsync takes JavaScript values and TSV-escapes a string before the engine reads
// it, so the text the client sent must be turned into the string whose escaping the engine
// reads as the same value:
// - a scalar type (String, DateTime64, Int64...): the text unescaped, which chdb escapes again;
// - a composite type (Array, Tuple, Map): the engine reads the text itself, with quoted
//   elements; a backslash cannot survive chdb's escaping alone, so each escape inside is
//   replaced by the character it stands for, and `\'` by the SQL form `''`;
// - `\N`: null, which chdb sends as `\N` (NULL for a Nullable type).

/** The types of `{name:Type}` placeholders in a query. */
export function placeholderTypes(sql: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const match of sql.matchAll(/\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^{}]+?)\s*\}/g)) {
    types.set(match[1] as string, match[2] as string);
  }
  return types;
}

const simpleEscapes: Record<string, string> = {
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  '0': '\0',
  a: '\u0007',
  v: '\u000b',
  '\\': '\\',
  "'": "'",
};

/** TabSeparated escaped text to its value; an unknown escape keeps its backslash, as the server does. */
export function unescapeText(text: string): string {
  return text.replace(/\\(x[0-9A-Fa-f]{2}|.)/gs, (whole, escape: string) => {
    if (escape.length === 3) return String.fromCharCode(parseInt(escape.slice(1), 16));
    return simpleEscapes[escape] ?? whole;
  });
}

/** Composite text with each escape resolved, `\'` as `''`. */
function compositeText(text: string): string {
  return text.replace(/\\(x[0-9A-Fa-f]{2}|.)/gs, (whole, escape: string) => {
    if (escape === "'") return "''";
    if (escape.length === 3) return String.fromCharCode(parseInt(escape.slice(1), 16));
    // An unknown escape: the engine keeps the backslash, which it reads from `\\`.
    return simpleEscapes[escape] ?? whole;
  });
}

const wrappers = /^(?:Nullable|LowCardinality)\s*\(\s*(.*)\)\s*$/is;

function isComposite(type: string): boolean {
  let inner = type.trim();
  for (let match = wrappers.exec(inner); match; match = wrappers.exec(inner))
    inner = (match[1] as string).trim();
  return /^(Array|Tuple|Map|Nested)\s*\(/i.test(inner);
}

/** The values to give chdb's queryBindAsync for the parameters of a query. */
export function bindingValues(
  sql: string,
  parameters: Record<string, string>,
): Record<string, string | null> {
  const types = placeholderTypes(sql);
  const values: Record<string, string | null> = {};
  for (const [name, text] of Object.entries(parameters)) {
    if (text === '\\N') values[name] = null;
    else values[name] = isComposite(types.get(name) ?? 'String') ? compositeText(text) : unescapeText(text);
  }
  return values;
}
