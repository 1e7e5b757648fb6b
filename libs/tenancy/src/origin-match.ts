/**
 * True when `origin` (an Origin header) is one of the `allowed` hostnames or a subdomain of
 * one. An empty list allows any origin; a missing or opaque (`null`) origin matches nothing.
 */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  // Stryker disable next-line ConditionalExpression: equivalent, new URL() of undefined or '' throws and the catch answers false too
  if (!origin) return false;
  let host: string;
  try {
    host = new URL(origin).hostname.toLowerCase();
  } catch {
    return false;
  }
  return allowed.some((a) => host === a || host.endsWith(`.${a}`));
}
