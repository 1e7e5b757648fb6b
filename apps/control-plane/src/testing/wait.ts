/**
 * Polls `probe` until it answers a value (anything but `undefined` or `false`) and returns that
 * value, so a test asserts on what it waited for; fails after `timeoutMs` naming `what`. A bound
 * on a wait for a condition, not a measure of speed (docs/testing.md#rules-the-suites-follow).
 */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
