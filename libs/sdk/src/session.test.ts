import { parseSession, SESSION_TIMEOUT_MS, touchSession } from './session';

describe('sessions', () => {
  const t0 = Date.parse('2026-01-01T10:00:00Z');

  it('starts a session named by its start time when none is stored', () => {
    expect(touchSession(null, t0)).toEqual({ id: String(t0), lastActivityAt: t0 });
  });

  it('continues while events come less than 30 minutes apart, however long the session', () => {
    let session = touchSession(null, t0);
    for (let i = 1; i <= 6; i += 1) session = touchSession(session, t0 + i * (SESSION_TIMEOUT_MS - 1));
    expect(session.id).toBe(String(t0));
    expect(session.lastActivityAt).toBe(t0 + 6 * (SESSION_TIMEOUT_MS - 1));
  });

  it('expires after 30 minutes of inactivity', () => {
    const session = touchSession(null, t0);
    const later = t0 + SESSION_TIMEOUT_MS;
    expect(touchSession(session, later)).toEqual({ id: String(later), lastActivityAt: later });
    expect(SESSION_TIMEOUT_MS).toBe(30 * 60 * 1000);
  });

  it('reads a stored session back and ignores a malformed one', () => {
    expect(parseSession(JSON.stringify({ id: '1', lastActivityAt: 5 }))).toEqual({
      id: '1',
      lastActivityAt: 5,
    });
    expect(parseSession('{"id":1,"lastActivityAt":5}')).toBeNull();
    expect(parseSession('{')).toBeNull();
  });
});
