/** The API key of `Authorization: Bearer <API_KEY>`: one token, any case of the scheme. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
}

/**
 * Whether the request presents something as a key, well-formed or not: a guess counts against
 * its address even when it is no single token.
 */
export function presentsKey(authorization: string | undefined): boolean {
  return /^Bearer\s+\S/i.test(authorization ?? '');
}
