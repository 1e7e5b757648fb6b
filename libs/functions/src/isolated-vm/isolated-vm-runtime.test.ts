import { defaultFunctionLimits, type FunctionContext } from '../function-contract';
import { describeRuntimeConformance } from '../runtime-conformance';
import { createIsolatedVmRuntime, type IsolatedVmRuntime } from './isolated-vm-runtime';

describeRuntimeConformance('isolated-vm', () => createIsolatedVmRuntime());

const ctx: FunctionContext = { kind: 'source', writeKeyId: 'wk-1' };
const event = { type: 'track', event: 'x', messageId: 'm-1', anonymousId: 'a' };
/** Budgets no run meets by accident on a loaded machine (isolated-vm's timeout is wall time). */
const relaxed = { ...defaultFunctionLimits, cpuMsPerEvent: 1_000, maxBatchCpuMs: 1_000 };

/** Polls `check` every 10 ms until it holds, for at most `ms`. */
async function waitFor(check: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('isolated-vm runtime: the sandbox process', () => {
  let runtime: IsolatedVmRuntime;

  beforeEach(() => {
    runtime = createIsolatedVmRuntime();
  });

  afterEach(async () => {
    await runtime.close();
  });

  it('a killed child fails its in-flight batch with function_crashed, and the next run forks a new one', async () => {
    const slow = {
      versionId: 'slow',
      code: 'export function transform(e) { const end = Date.now() + 2000; while (Date.now() < end) {} return e; }',
    };
    const limits = { ...defaultFunctionLimits, cpuMsPerEvent: 5_000, maxBatchCpuMs: 5_000 };
    await runtime.run({ versionId: 'warm', code: 'export default (e) => e' }, [event], ctx, relaxed);
    const [pid] = runtime.pids;
    expect(pid).toEqual(expect.any(Number));
    const inFlight = runtime.run(slow, [event], ctx, limits);
    process.kill(pid!, 'SIGKILL');
    await expect(inFlight).resolves.toMatchObject({
      outcome: 'failed',
      code: 'function_crashed',
      message: expect.stringContaining('SIGKILL'),
    });
    const next = await runtime.run(
      { versionId: 'warm', code: 'export default (e) => e' },
      [event],
      ctx,
      relaxed,
    );
    expect(next).toMatchObject({ outcome: 'completed', results: [{ result: 'ok', events: [event] }] });
    expect(runtime.pids[0]).toEqual(expect.any(Number));
    expect(runtime.pids[0]).not.toBe(pid);
  });

  it('a child that stops answering is killed at the deadline; its batch is function_crashed', async () => {
    // Deadline: budget 50 ms + the 100 ms setup cap + 2 s.
    const limits = { ...defaultFunctionLimits, cpuMsPerEvent: 50, maxBatchCpuMs: 100 };
    await runtime.run({ versionId: 'warm', code: 'export default (e) => e' }, [event], ctx, relaxed);
    const [pid] = runtime.pids;
    process.kill(pid!, 'SIGSTOP');
    const started = Date.now();
    const run = await runtime.run({ versionId: 'warm', code: '' }, [event], ctx, limits);
    const waited = Date.now() - started;
    expect(run).toMatchObject({
      outcome: 'failed',
      code: 'function_crashed',
      message: 'the sandbox did not answer within 2150 ms and was restarted',
    });
    expect(waited).toBeGreaterThanOrEqual(2_100);
    expect(waited).toBeLessThan(4_000);
    const next = await runtime.run(
      { versionId: 'warm', code: 'export default (e) => e' },
      [event],
      ctx,
      relaxed,
    );
    expect(next).toMatchObject({ outcome: 'completed', results: [{ result: 'ok', events: [event] }] });
    expect(runtime.pids[0]).not.toBe(pid);
  });

  it("a version's batches queue in the parent, so a long queue does not pass the deadline", async () => {
    // Each batch busies its isolate 250 ms of a 300 ms budget; the deadline is 300 + 300 + 2000 ms
    // and the 12 batches take 3 s in a row: only a deadline counted from the batch's turn holds.
    const limits = { ...defaultFunctionLimits, cpuMsPerEvent: 300, maxBatchCpuMs: 300 };
    const busy = {
      versionId: 'busy',
      code: 'export function transform(e) { const end = Date.now() + 250; while (Date.now() < end) {} return e; }',
    };
    const started = Date.now();
    const runs = await Promise.all(Array.from({ length: 12 }, () => runtime.run(busy, [event], ctx, limits)));
    expect(Date.now() - started).toBeGreaterThan(2_600);
    expect(runs.map((run) => run.outcome)).toEqual(new Array(12).fill('completed'));
  });

  it('a child keeps isolatesPerProcess versions warm and disposes the least recently used', async () => {
    const small = createIsolatedVmRuntime({ isolatesPerProcess: 2 });
    try {
      const code =
        'export function transform() { globalThis.n = (globalThis.n ?? 0) + 1; return { n: globalThis.n }; }';
      const n = async (versionId: string) => {
        const run = await small.run({ versionId, code }, [event], ctx, relaxed);
        if (run.outcome !== 'completed' || run.results[0]?.result !== 'ok')
          throw new Error(JSON.stringify(run));
        return run.results[0].events[0];
      };
      expect(await n('a')).toEqual({ n: 1 });
      expect(await n('b')).toEqual({ n: 1 });
      expect(await n('a')).toEqual({ n: 2 });
      // c evicts b, the least recently used; a stays warm.
      expect(await n('c')).toEqual({ n: 1 });
      expect(await n('a')).toEqual({ n: 3 });
      expect(await n('b')).toEqual({ n: 1 });
    } finally {
      await small.close();
    }
  });

  it('the child runs with an empty environment', async () => {
    process.env.FUNCTIONS_TEST_SECRET = 'must-not-cross';
    try {
      // The guest cannot read the environment, so the child's /proc entry is the witness.
      await runtime.run({ versionId: 'env', code: 'export default (e) => e' }, [event], ctx, relaxed);
      const { readFileSync } = await import('node:fs');
      const environ = readFileSync(`/proc/${runtime.pids[0]}/environ`, 'utf8');
      // Node itself adds the IPC channel's two variables to a forked child; nothing else is there.
      expect(environ.split('\0').filter(Boolean).sort()).toEqual([
        'NODE_CHANNEL_FD=3',
        'NODE_CHANNEL_SERIALIZATION_MODE=advanced',
      ]);
    } finally {
      delete process.env.FUNCTIONS_TEST_SECRET;
    }
  });

  it('a root parent drops the child to the uid and gid it is given', async () => {
    // As root (this machine, containers) the child becomes nobody; otherwise it stays the parent's user.
    const root = process.getuid?.() === 0;
    const expected = root ? 65534 : process.getuid?.();
    const dropped = createIsolatedVmRuntime(root ? { uid: 65534, gid: 65534 } : {});
    try {
      const run = await dropped.run(
        { versionId: 'uid', code: 'export default (e) => e' },
        [event],
        ctx,
        relaxed,
      );
      expect(run).toMatchObject({ outcome: 'completed', results: [{ result: 'ok', events: [event] }] });
      const { readFileSync } = await import('node:fs');
      const status = readFileSync(`/proc/${dropped.pids[0]}/status`, 'utf8');
      expect(status).toContain(`\nUid:\t${expected}\t${expected}\t${expected}\t${expected}\n`);
    } finally {
      await dropped.close();
    }
  });

  it('a timed-out batch returns the lines logged before the loop', async () => {
    const limits = { ...defaultFunctionLimits, cpuMsPerEvent: 100, maxBatchCpuMs: 100 };
    const run = await runtime.run(
      { versionId: 'loop', code: "export function transform() { console.log('before'); while (true) {} }" },
      [event],
      ctx,
      limits,
    );
    expect(run).toEqual({
      outcome: 'failed',
      code: 'function_timeout',
      message: 'the batch exceeded its CPU budget of 100 ms',
      logs: [{ event: 0, level: 'log', message: 'before' }],
      logsDropped: 0,
      cpuMicros: expect.any(Number),
    });
    expect(run.cpuMicros).toBeGreaterThanOrEqual(90_000);
  });

  it('versions spread over several children, each always on the same one', async () => {
    const pool = createIsolatedVmRuntime({ processes: 2 });
    try {
      const code =
        'export function transform() { globalThis.n = (globalThis.n ?? 0) + 1; return { n: globalThis.n }; }';
      for (let round = 1; round <= 2; round += 1)
        for (const versionId of ['a', 'b', 'c', 'd']) {
          const run = await pool.run({ versionId, code }, [event], ctx, relaxed);
          // Warm state proves the same child (and isolate) served the version again.
          expect(run).toMatchObject({
            outcome: 'completed',
            results: [{ result: 'ok', events: [{ n: round }] }],
          });
        }
      expect(pool.pids.filter((pid) => pid !== undefined)).toHaveLength(2);
    } finally {
      await pool.close();
    }
  });

  it('run after close rejects with functions_runtime_closed, and close ends the children', async () => {
    await runtime.run({ versionId: 'c', code: 'export default (e) => e' }, [event], ctx, relaxed);
    const [pid] = runtime.pids;
    await runtime.close();
    await expect(runtime.run({ versionId: 'c', code: '' }, [event], ctx, relaxed)).rejects.toMatchObject({
      code: 'functions_runtime_closed',
      status: 503,
    });
    await waitFor(() => {
      try {
        process.kill(pid!, 0);
        return false;
      } catch {
        return true;
      }
    });
  });
});
