/**
 * The probes every service answers (docs/operations.md, "Probes"): GET /livez is 200 while the
 * process answers at all and checks nothing else (a failing liveness probe restarts the pod, which
 * cures no broken dependency); GET /readyz is 200 when every dependency the service needs to
 * serve answers, 503 naming the ones that do not (the pod is taken out of its Service meanwhile).
 */
export interface ProbeAnswer {
  status: 200 | 503;
  body: { ok: boolean; checks: Record<string, 'up' | 'down'>; failing?: string[] };
}

/** Resolves when the dependency answers; rejects (or outlives the timeout) when it does not. */
export type ReadinessCheck = () => Promise<unknown>;

export const livenessAnswer = { status: 200, body: { ok: true } } as const;

/**
 * Runs the checks at once, each bounded by `timeoutMs`. The body names each check `up` or
 * `down` and lists the failing ones; error messages are not in it (a probe may be public).
 */
export async function readiness(
  checks: Record<string, ReadinessCheck>,
  options: { timeoutMs?: number; onFailure?: (check: string, error: unknown) => void } = {},
): Promise<ProbeAnswer> {
  const timeoutMs = options.timeoutMs ?? 2000;
  const results = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          check(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
        return [name, 'up'] as const;
      } catch (error) {
        options.onFailure?.(name, error);
        return [name, 'down'] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const failing = results.filter(([, state]) => state === 'down').map(([name]) => name);
  const body = { ok: failing.length === 0, checks: Object.fromEntries(results) };
  return failing.length === 0 ? { status: 200, body } : { status: 503, body: { ...body, failing } };
}

/**
 * A check shared by concurrent probes and reused for `cacheMs`: probes from every kubelet and
 * load balancer cost the dependency one request per interval.
 */
export function sharedCheck(check: ReadinessCheck, cacheMs = 1000): ReadinessCheck {
  let last: { at: number; result: Promise<unknown> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= cacheMs) {
      const result = check();
      // A failure is kept for the interval too, but is not an unhandled rejection meanwhile.
      result.catch(() => undefined);
      last = { at: now, result };
    }
    return last.result;
  };
}
