/** Inactivity after which the next event starts a new session (Segment's and GA's 30 minutes). */
export const SESSION_TIMEOUT_MS = 30 * 60 * 1000;

export interface Session {
  /** The session's start in epoch milliseconds, as a string: the form Amplitude and others take. */
  id: string;
  lastActivityAt: number;
}

/** The session an event at `now` belongs to: the stored one while active, else a new one. */
export function touchSession(stored: Session | null, now: number, timeoutMs = SESSION_TIMEOUT_MS): Session {
  if (stored && now - stored.lastActivityAt < timeoutMs) return { id: stored.id, lastActivityAt: now };
  return { id: String(now), lastActivityAt: now };
}

export function parseSession(json: string | null): Session | null {
  try {
    const value = (json ? JSON.parse(json) : null) as Partial<Session> | null;
    return value && typeof value.id === 'string' && value.id && typeof value.lastActivityAt === 'number'
      ? { id: value.id, lastActivityAt: value.lastActivityAt }
      : null;
  } catch {
    return null;
  }
}
