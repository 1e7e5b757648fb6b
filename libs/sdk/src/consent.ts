/** Consent groups (`analytics`, `marketing`, ...) granted (true) or denied (false). */
export type Consent = Record<string, boolean>;

/**
 * Merges an update from `setConsent` into the current state. Only booleans count; other
 * values are reported back so the caller can warn, never stored as a guess.
 */
export function mergeConsent(current: Consent, update: unknown): { consent: Consent; ignored: string[] } {
  if (!update || typeof update !== 'object' || Array.isArray(update)) {
    return { consent: current, ignored: ['(not an object)'] };
  }
  const consent = { ...current };
  const ignored: string[] = [];
  for (const [group, value] of Object.entries(update)) {
    if (typeof value === 'boolean') consent[group] = value;
    else ignored.push(group);
  }
  return { consent, ignored };
}

export function parseConsent(json: string | null): Consent | null {
  try {
    const value: unknown = json ? JSON.parse(json) : null;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
    const { consent, ignored } = mergeConsent({}, value);
    return ignored.length ? null : consent;
  } catch {
    return null;
  }
}

interface WithContext {
  context?: Record<string, unknown>;
}

/**
 * Stamps events with the consent in force when they are sent (docs/sdk.md#consent: "granted or denied at
 * send time"). Events are never dropped for a denial: the server filters per destination, and
 * the warehouse keeps them. With no consent ever given, events go unstamped, which the server
 * reads as granted.
 */
export function stampConsent<E extends WithContext>(events: readonly E[], consent: Consent | null): E[] {
  if (!consent || Object.keys(consent).length === 0) return [...events];
  return events.map((event) => ({ ...event, context: { ...event.context, consent: { ...consent } } }));
}
