import { parseJsonText } from '@pipeline/events';
import fc from 'fast-check';
import { defaultFunctionLimits, type BatchRun, type FunctionContext } from '../function-contract';
import { describeRuntimeConformance } from '../runtime-conformance';
import { createQuickJsRuntime, QuickJsRuntime } from './quickjs-runtime';

// The contract, the walls and the limits every runtime passes; below, what is QuickJS's own.
describeRuntimeConformance('quickjs', () => createQuickJsRuntime());

const ctx: FunctionContext = {
  kind: 'destination',
  destination: 'amplitude',
  integrationId: 'int-1',
  writeKeyId: 'wk-1',
};
let versions = 0;
const fn = (code: string) => ({ versionId: `v-${(versions += 1)}`, code });
const event = (n: number) => ({
  type: 'track',
  event: 'Order Completed',
  messageId: `m-${n}`,
  properties: { total: n },
});
/** Budgets no case here meets by accident on a loaded machine. */
const relaxed = { ...defaultFunctionLimits, cpuMsPerEvent: 1_000, maxBatchCpuMs: 5_000 };

const completed = (run: BatchRun) => {
  if (run.outcome !== 'completed') throw new Error(`expected completed, got ${run.code}: ${run.message}`);
  return run.results;
};

describe('QuickJsRuntime', () => {
  let runtime: QuickJsRuntime;
  beforeAll(() => {
    runtime = new QuickJsRuntime();
  });
  afterAll(() => runtime.close());

  it('keeps working when the function breaks the intrinsics the harness uses', async () => {
    const breaker = fn(`JSON.stringify = () => '{"forged":true}'; JSON.parse = () => [];
      Array.prototype.push = null; Array.isArray = () => false; String = null;
      export function transform(e) { return { seen: e.properties.total, kind: typeof JSON.stringify } }`);
    expect(completed(await runtime.run(breaker, [event(1), event(2)], ctx, relaxed))).toEqual([
      { result: 'ok', events: [{ seen: 1, kind: 'function' }] },
      { result: 'ok', events: [{ seen: 2, kind: 'function' }] },
    ]);
    // Its next batch too: the harness captured them before the module ran.
    expect(completed(await runtime.run(breaker, [event(3)], ctx, relaxed))).toEqual([
      { result: 'ok', events: [{ seen: 3, kind: 'function' }] },
    ]);
  });

  it('fails a batch that grows linear memory past the limit, which QuickJS lets through, and replaces the module', async () => {
    // quickjs-emscripten's setMemoryLimit bounds one allocation, not the total: 100 strings of
    // 1 MB pass a 64 MB limit. The host sees the linear memory grow by more than the limit.
    const code = fn(`export function transform(e) {
      const hoard = [];
      if (e.properties.total === 1) for (let i = 0; i < 100; i++) hoard.push('y'.repeat(1 << 20) + i);
      return { kept: hoard.length };
    }`);
    const run = await runtime.run(code, [event(0), event(1)], ctx, relaxed);
    expect(run).toMatchObject({
      outcome: 'failed',
      code: 'function_memory',
      message: 'the function ran out of its 64 MB of memory',
    });
    expect(completed(await runtime.run(code, [event(0)], ctx, relaxed))).toEqual([
      { result: 'ok', events: [{ kept: 0 }] },
    ]);
  });

  it('turns an overflow of V8’s own stack inside the module into function_crashed, then serves a new module', async () => {
    // A QuickJS stack limit of 4 MB lets the C frames overflow V8's native stack first: a host
    // RangeError that leaves the Wasm module aborted, so the runtime must drop it whole.
    const deepRuntime = new QuickJsRuntime({ maxStackBytes: 4 * 1024 * 1024 });
    try {
      const code = fn(`const down = (n) => down(n + 1) + 1;
        export function transform(e) { return e.properties.total === 1 ? { depth: down(0) } : e }`);
      const crashed = await deepRuntime.run(code, [event(1)], ctx, relaxed);
      expect(crashed).toMatchObject({
        outcome: 'failed',
        code: 'function_crashed',
        message: expect.stringContaining('the QuickJS module failed'),
      });
      expect(completed(await deepRuntime.run(code, [event(2)], ctx, relaxed))).toEqual([
        { result: 'ok', events: [event(2)] },
      ]);
    } finally {
      await deepRuntime.close();
    }
  });

  it('keeps at most maxContexts versions warm, least recently used out first', async () => {
    const small = new QuickJsRuntime({ maxContexts: 2 });
    const code = `let n = 0; export const transform = () => ({ n: ++n });`;
    const [a, b, c] = [fn(code), fn(code), fn(code)];
    const n = async (version: typeof a) => completed(await small.run(version, [event(0)], ctx, relaxed))[0];
    expect(await n(a)).toEqual({ result: 'ok', events: [{ n: 1 }] });
    expect(await n(b)).toEqual({ result: 'ok', events: [{ n: 1 }] });
    expect(await n(a)).toEqual({ result: 'ok', events: [{ n: 2 }] });
    expect(await n(c)).toEqual({ result: 'ok', events: [{ n: 1 }] });
    // b was the least recently used: evicted; a stayed warm.
    expect(await n(a)).toEqual({ result: 'ok', events: [{ n: 3 }] });
    expect(await n(b)).toEqual({ result: 'ok', events: [{ n: 1 }] });
    await small.close();
    await expect(small.run(a, [event(0)], ctx)).rejects.toThrow('closed');
  });
});

describe('QuickJsRuntime with the handle-API input', () => {
  let runtime: QuickJsRuntime;
  beforeAll(() => {
    runtime = new QuickJsRuntime({ input: 'handles' });
  });
  afterAll(() => runtime.close());

  it('maps events built with the handle API, `__proto__` kept as an own key', async () => {
    const code = fn(`export default function (e, ctx) {
      e.event = 'Purchase'; e.properties.total *= 2; e.context = { dest: ctx.destination };
      return { ...e, protoIsOwn: Object.keys(e).includes('__proto__'), protoIntact: Object.getPrototypeOf(e) === Object.prototype };
    }`);
    const input = parseJsonText(
      '{"type":"track","event":"x","properties":{"total":3},"__proto__":{"a":1}}',
    ) as object;
    expect(completed(await runtime.run(code, [input], ctx, relaxed))).toEqual([
      {
        result: 'ok',
        events: [
          parseJsonText(
            '{"type":"track","event":"Purchase","properties":{"total":6},"__proto__":{"a":1},"context":{"dest":"amplitude"},"protoIsOwn":true,"protoIntact":true}',
          ),
        ],
      },
    ]);
  });

  it('passes any well-formed event through identity unchanged (generative)', async () => {
    const identity = fn('export const transform = (e) => e;');
    // Strings cross the handle API as UTF-8, which has no lone surrogates: this input loses them
    // (one reason `json` is the default), so it is held to well-formed strings.
    const oddKeys = fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      '\\',
      '\n',
      '"',
      '\\n',
      'toString',
      '',
      '\u2028',
    );
    const key = fc.oneof(oddKeys, fc.string({ unit: 'grapheme' }));
    const leaf = fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom(
        0,
        -1,
        1.5,
        Number.MAX_SAFE_INTEGER,
        Number.MIN_SAFE_INTEGER,
        Number.MAX_VALUE,
        Number.MIN_VALUE,
        1e21,
        1e-7,
      ),
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
      fc.boolean(),
      fc.constant(null),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(key, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.dictionary(key, value, { maxKeys: 6 }), { minLength: 1, maxLength: 5 }),
        async (events) => {
          // parseJsonText, not JSON.parse: V8's corrupts escaped keys.
          const hostEvents = events.map((e) => parseJsonText(JSON.stringify(e)) as object);
          const results = completed(await runtime.run(identity, hostEvents, ctx, relaxed));
          expect(results).toEqual(events.map((e) => ({ result: 'ok', events: [e] })));
        },
      ),
      { numRuns: 100 },
    );
  });
});
