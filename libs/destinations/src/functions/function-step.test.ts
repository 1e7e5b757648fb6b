import { PassThrough } from 'node:stream';
import type { TrackingEvent } from '@pipeline/events';
import type { BatchRun, FunctionCode, FunctionLimits, FunctionRuntime } from '@pipeline/functions';
import { createLogger } from '@pipeline/logger';
import type { BoundFunction } from '@pipeline/tenancy';
import { applyBound, FunctionStep } from './function-step';

// The step's own decisions (the breaker, the counters, the reasons) over a scripted runtime:
// pure logic. What a real sandbox answers is function-delivery.test.ts's.
const stream = new PassThrough();
const logger = createLogger({ service: 'function-step-test', stream });
/** The log lines written so far, parsed. */
const lines: Record<string, unknown>[] = [];
stream.on('data', (chunk: Buffer) => {
  for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line));
});
const logged = (message: string) =>
  lines
    .filter((line) => line.message === message)
    .map(({ level, functionId, version, failures, code, cooldownMs }) => ({
      level,
      functionId,
      version,
      failures,
      code,
      cooldownMs,
    }));
const bound: BoundFunction = { functionId: 'fn-9', versionId: 'v-9', version: 4, code: 'unused' };
const ctx = { kind: 'destination', destination: 'webhook', writeKeyId: 'wk' } as const;
const input = (id: string): TrackingEvent =>
  ({
    type: 'track',
    event: 'E',
    messageId: id,
    anonymousId: 'a',
    timestamp: '2026-11-30T00:00:00.000Z',
  }) as TrackingEvent;
const telemetry = { logs: [], logsDropped: 0, cpuMicros: 250 };
const timedOut: BatchRun = { outcome: 'failed', code: 'function_timeout', message: 'spun', ...telemetry };

function scripted(answers: BatchRun[]) {
  const seen: { fn: FunctionCode; limits: FunctionLimits | undefined; events: number }[] = [];
  const runtime: FunctionRuntime = {
    name: 'isolated-vm',
    run: (fn, events, _ctx, limits) => {
      seen.push({ fn, limits, events: events.length });
      const answer = answers.shift();
      if (!answer) throw new Error('no scripted answer left');
      return Promise.resolve(answer);
    },
    close: () => Promise.resolve(),
  };
  return { runtime, seen };
}

describe('FunctionStep', () => {
  it('checks each result and names the function and version in every reason', async () => {
    const ok: BatchRun = {
      outcome: 'completed',
      results: [
        { result: 'ok', events: [{ ...input('x'), event: 'Renamed' }] },
        { result: 'dropped' },
        { result: 'error', code: 'function_error', message: 'TypeError: no' },
      ],
      ...telemetry,
    };
    const { runtime, seen } = scripted([ok]);
    const step = new FunctionStep(runtime, logger, { limits: { cpuMsPerEvent: 7 } });
    const outcome = await step.apply(bound, [input('a'), input('b'), input('c'), input('d')], ctx);
    expect(seen[0]?.limits).toMatchObject({ cpuMsPerEvent: 7, maxBatchCpuMs: 1000, memoryMb: 64 });
    expect(seen[0]?.fn).toEqual({ versionId: 'v-9', code: 'unused' });
    expect(seen[0]?.events).toBe(4);
    expect(outcome.kind === 'applied' && outcome.results).toEqual([
      { result: 'ok', events: [{ ...input('a'), event: 'Renamed' }] },
      { result: 'dropped' },
      {
        result: 'error',
        code: 'function_error',
        message: 'function_error: function fn-9 version 4: TypeError: no',
      },
      {
        result: 'error',
        code: 'function_error',
        message: 'function_error: function fn-9 version 4: the sandbox gave no result for this event',
      },
    ]);
    expect([...step.counters.events]).toEqual([
      ['ok', 1],
      ['dropped', 1],
      ['function_error', 2],
    ]);
    expect(step.counters.cpuMicros).toBe(250);
  });

  it('retries failed batches, disables the version after the set number in a row, and probes after the cooldown', async () => {
    let now = 1_000;
    const ran: BatchRun = { outcome: 'completed', results: [{ result: 'dropped' }], ...telemetry };
    const { runtime, seen } = scripted([timedOut, timedOut, timedOut, ran, timedOut, ran]);
    const step = new FunctionStep(
      runtime,
      logger,
      { breaker: { failures: 2, cooldownMs: 10_000 } },
      () => now,
    );
    const once = () => step.apply(bound, [input('a')], ctx);

    expect(await once()).toEqual({
      kind: 'failed',
      reason: 'function_timeout: function fn-9 version 4: spun',
      retryAfterMs: 0,
      hold: false,
      run: timedOut,
    });
    expect(step.isDisabled('v-9')).toBe(false);
    expect(logged('function disabled: its events are held')).toEqual([]);
    await once();
    expect(step.isDisabled('v-9')).toBe(true);
    expect(step.counters.disabled()).toBe(1);
    expect(logged('function disabled: its events are held')).toEqual([
      {
        level: 'warn',
        functionId: 'fn-9',
        version: 4,
        failures: 2,
        code: 'function_timeout',
        cooldownMs: 10_000,
      },
    ]);
    now += 4_000;
    expect(await once()).toEqual({
      kind: 'failed',
      reason:
        'function_disabled: function fn-9 version 4 failed 2 batches in a row; its events are held until a probe succeeds',
      retryAfterMs: 6_000,
      hold: true,
    });
    expect(seen).toHaveLength(2);

    // The cooldown over: one probe runs; it fails, and the version is disabled again at once.
    now += 6_000;
    expect(step.isDisabled('v-9')).toBe(false);
    expect(step.counters.disabled()).toBe(0);
    expect((await once()).kind).toBe('failed');
    expect(step.isDisabled('v-9')).toBe(true);
    expect(seen).toHaveLength(3);

    // The next probe runs: the version is enabled, and one failure no longer disables it.
    now += 10_000;
    expect(logged('function enabled again: a probe batch ran')).toEqual([]);
    expect((await once()).kind).toBe('applied');
    expect(step.isDisabled('v-9')).toBe(false);
    expect(logged('function enabled again: a probe batch ran')).toEqual([
      {
        level: 'info',
        functionId: 'fn-9',
        version: 4,
        failures: undefined,
        code: undefined,
        cooldownMs: undefined,
      },
    ]);
    await once();
    expect(step.isDisabled('v-9')).toBe(false);
    expect(step.counters.disabled()).toBe(0);
    // A failure that did not disable it, then a success: nothing to announce.
    expect((await once()).kind).toBe('applied');
    expect(logged('function enabled again: a probe batch ran')).toHaveLength(1);
    expect(step.counters.events.get('function_timeout')).toBe(4);
    expect(step.counters.events.get('dropped')).toBe(2);
  });

  it('keeps a breaker per version: another version of the same function runs', async () => {
    const ran: BatchRun = { outcome: 'completed', results: [{ result: 'dropped' }], ...telemetry };
    const { runtime } = scripted([timedOut, ran]);
    const step = new FunctionStep(runtime, logger, { breaker: { failures: 1 } });
    await step.apply(bound, [input('a')], ctx);
    expect(step.isDisabled('v-9')).toBe(true);
    const fixed = { ...bound, versionId: 'v-10', version: 5 };
    expect((await step.apply(fixed, [input('a')], ctx)).kind).toBe('applied');
  });

  it('holds the events of a bound function when no step runs functions, and runs them through one', async () => {
    expect(await applyBound(undefined, bound, [input('a')], ctx)).toEqual({
      kind: 'failed',
      reason:
        'function_unavailable: function fn-9 version 4 is bound but this consumer runs no functions; its events are held',
      retryAfterMs: 30_000,
      hold: true,
    });
    const ran: BatchRun = { outcome: 'completed', results: [{ result: 'dropped' }], ...telemetry };
    const { runtime, seen } = scripted([ran]);
    const outcome = await applyBound(new FunctionStep(runtime, logger), bound, [input('a')], ctx);
    expect(outcome).toEqual({ kind: 'applied', results: [{ result: 'dropped' }], run: ran });
    expect(seen).toHaveLength(1);
  });
});
