/** One reference token of a JSON Pointer, escaped as RFC 6901 says (`~` first, then `/`). */
export const escapePointerToken = (token: string): string => token.replace(/~/g, '~0').replace(/\//g, '~1');

/** A JSON Pointer from its unescaped tokens. */
export const pointerOf = (tokens: readonly (string | number)[]): string =>
  tokens.map((t) => `/${escapePointerToken(String(t))}`).join('');

/** The tokens of a JSON Pointer, unescaped; undefined when the text is not a pointer. */
export function pointerTokens(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}
