/**
 * The conformance suite every FunctionRuntime passes (docs: privacy-and-functions notes, 2.6.1):
 * the contract's results, the sandbox's walls and its limits, asserted on values. A runtime's test
 * file calls `describeRuntimeConformance(name, makeRuntime)`; what is specific to one runtime (a
 * killed child process) stays in that runtime's own tests.
 *
 * Kept out of the build (tsconfig.build.json): it needs jest's globals and fast-check.
 */
import fc from 'fast-check';
import { parseJsonText, validateEvent } from '@pipeline/events';
import {
  batchCpuBudgetMs,
  defaultFunctionLimits,
  type BatchRun,
  type EventResult,
  type FunctionContext,
  type FunctionLimits,
  type FunctionRuntime,
} from './function-contract';

const ctx: FunctionContext = {
  kind: 'destination',
  destination: 'webhook',
  integrationId: 'int-1',
  writeKeyId: 'wk-1',
};

/**
 * The budgets of cases that test something else than the CPU limit: isolated-vm's timeout is wall
 * time, and on a loaded 2-core machine a 5 ms budget can pass while the process waits for a core.
 */
const relaxed: FunctionLimits = { ...defaultFunctionLimits, cpuMsPerEvent: 1_000, maxBatchCpuMs: 5_000 };
/** For cases that must not meet the CPU budget by accident: a stack overflow or a heap filling up. */
const roomy: FunctionLimits = { ...defaultFunctionLimits, cpuMsPerEvent: 10_000, maxBatchCpuMs: 10_000 };

/** The CPU budget of the timeout case, and what the wall clock may add to it (measured, see below). */
const timeoutBudgetMs = 200;
/**
 * Measured on the 2-core machine: isolated-vm stops a warm loop 5-11 ms after its 200 ms. The
 * allowance covers the rest of the round trip of a cold version: the IPC both ways, creating the
 * isolate and compiling the module (about 20-40 ms on a loaded machine) and disposing it.
 */
const timeoutAllowanceMs = 100;

const track = (i: number, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'track',
  event: `Order ${i}`,
  messageId: `m-${i}`,
  anonymousId: 'anon-1',
  timestamp: '2026-01-01T00:00:00.000Z',
  properties: { total: i * 10, currency: 'EUR', items: [{ sku: `s-${i}` }] },
  ...extra,
});

const completed = (run: BatchRun): EventResult[] => {
  if (run.outcome !== 'completed') throw new Error(`expected a completed run, got ${JSON.stringify(run)}`);
  return run.results;
};

const okEvents = (result: EventResult | undefined): unknown[] => {
  if (result?.result !== 'ok') throw new Error(`expected an ok result, got ${JSON.stringify(result)}`);
  return result.events;
};

/** The exact JSON text the door would read, with every key written as \uXXXX escapes (V8's bug). */
const escapedKeysJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(escapedKeysJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value).map((key) => {
      let escaped = '"';
      for (let i = 0; i < key.length; i += 1)
        escaped += `\\u${key.charCodeAt(i).toString(16).padStart(4, '0')}`;
      return `${escaped}":${escapedKeysJson((value as Record<string, unknown>)[key])}`;
    });
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
};

const oddKey = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '\\u0061',
    'a\\b',
    '\\',
    '"',
    '',
    '\n',
    '\u2028',
    '😀',
    'e\u0301',
  ),
);

const edgeNumber = fc.oneof(
  fc.constantFrom(
    0,
    -1,
    5e-324,
    1.7976931348623157e308,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 2,
    -Number.MAX_SAFE_INTEGER,
    1e21,
    1e-7,
    0.1 + 0.2,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (Object.is(d, -0) ? 0 : d)),
  fc.integer(),
);

const jsonData = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.string({ unit: 'grapheme', maxLength: 12 }),
    fc.string({ unit: 'binary', maxLength: 6 }),
    edgeNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('node'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc.array(fc.tuple(oddKey, tie('node')), { maxLength: 5 }).map((entries) => {
    const object: Record<string, unknown> = {};
    for (const [key, value] of entries)
      Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
    return object;
  }),
})).node;

/** A candidate event; only the ones the door accepts are used. */
const candidateEvent = fc.record({
  type: fc.constantFrom('track', 'page', 'identify'),
  event: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
  userId: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }),
  messageId: fc.uuid(),
  anonymousId: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 10 }),
  timestamp: fc.constant('2026-01-01T00:00:00.000Z'),
  properties: jsonData.filter((v) => v !== null && typeof v === 'object' && !Array.isArray(v)),
  traits: jsonData.filter((v) => v !== null && typeof v === 'object' && !Array.isArray(v)),
  context: fc.record({ app: fc.record({ name: fc.string({ unit: 'grapheme', maxLength: 8 }) }) }),
});

/** What the door makes of an event written as JSON text: the parsed, validated event, or nothing. */
const throughTheDoor = (candidate: unknown, escapeKeys: boolean): object | undefined => {
  const text = escapeKeys ? escapedKeysJson(candidate) : JSON.stringify(candidate);
  const validation = validateEvent(parseJsonText(text), Buffer.byteLength(text, 'utf8'));
  return validation.valid ? validation.event : undefined;
};

export function describeRuntimeConformance(
  name: string,
  makeRuntime: () => FunctionRuntime | Promise<FunctionRuntime>,
): void {
  describe(`${name} runtime conformance`, () => {
    let runtime: FunctionRuntime;
    let versions = 0;
    /** A fresh version id per function: isolates are per version, so no case sees another's state. */
    const fn = (code: string) => ({ versionId: `${name}-conformance-${(versions += 1)}`, code });

    beforeAll(async () => {
      runtime = await makeRuntime();
    });

    afterAll(async () => {
      await runtime.close();
    });

    describe('results', () => {
      it('identity returns every event unchanged, one output each', async () => {
        const events = [track(1), track(2), track(3)];
        const run = await runtime.run(
          fn('export function transform(event) { return event; }'),
          events,
          ctx,
          relaxed,
        );
        expect(run).toEqual({
          outcome: 'completed',
          results: events.map((event) => ({ result: 'ok', events: [event] })),
          logs: [],
          logsDropped: 0,
          cpuMicros: expect.any(Number),
        });
      });

      it('the default limits serve a batch of 100 events', async () => {
        const events = Array.from({ length: 100 }, (_, i) => track(i));
        expect(batchCpuBudgetMs(defaultFunctionLimits, events.length)).toBe(500);
        const run = await runtime.run(fn('export default (event) => event;'), events, ctx);
        expect(completed(run)).toEqual(events.map((event) => ({ result: 'ok', events: [event] })));
      });

      it('a mapping sees the event and ctx, and a default export is a transform too', async () => {
        const code = `export default function (event, ctx) {
          return { ...event, event: event.event.toUpperCase(), properties: { cents: event.properties.total * 100, to: ctx.destination, key: ctx.writeKeyId } };
        }`;
        const results = completed(await runtime.run(fn(code), [track(1), track(2)], ctx, relaxed));
        expect(results).toEqual([
          {
            result: 'ok',
            events: [
              { ...track(1), event: 'ORDER 1', properties: { cents: 1000, to: 'webhook', key: 'wk-1' } },
            ],
          },
          {
            result: 'ok',
            events: [
              { ...track(2), event: 'ORDER 2', properties: { cents: 2000, to: 'webhook', key: 'wk-1' } },
            ],
          },
        ]);
      });

      it('null and undefined drop the event', async () => {
        const code = `export function transform(event) {
          if (event.messageId === 'm-1') return null;
          if (event.messageId === 'm-2') return undefined;
          return event;
        }`;
        const results = completed(await runtime.run(fn(code), [track(1), track(2), track(3)], ctx, relaxed));
        expect(results).toEqual([
          { result: 'dropped' },
          { result: 'dropped' },
          { result: 'ok', events: [track(3)] },
        ]);
      });

      it('an array multiplies the event', async () => {
        const code = `export function transform(event) {
          return [1, 2, 3].map((n) => ({ ...event, messageId: event.messageId + ':' + n }));
        }`;
        const results = completed(await runtime.run(fn(code), [track(1)], ctx, relaxed));
        expect(results).toEqual([
          {
            result: 'ok',
            events: [
              { ...track(1), messageId: 'm-1:1' },
              { ...track(1), messageId: 'm-1:2' },
              { ...track(1), messageId: 'm-1:3' },
            ],
          },
        ]);
      });

      it('more outputs than maxOutputEvents make the event function_output_invalid', async () => {
        const code = `export function transform(event) {
          const n = event.messageId === 'm-1' ? 11 : 10;
          return Array.from({ length: n }, (_, i) => ({ ...event, i }));
        }`;
        const results = completed(await runtime.run(fn(code), [track(1), track(2)], ctx, relaxed));
        expect(results[0]).toEqual({
          result: 'error',
          code: 'function_output_invalid',
          message: expect.stringContaining('11'),
        });
        expect(okEvents(results[1])).toHaveLength(10);
      });

      it('outputs that are not objects, or hold what JSON cannot carry, are function_output_invalid', async () => {
        const code = `export function transform(event) {
          switch (event.messageId) {
            case 'm-1': return 42;
            case 'm-2': return [event, 'text'];
            case 'm-3': return { ...event, f: () => 1 };
            case 'm-4': return { ...event, n: NaN };
            default: return event;
          }
        }`;
        const events = [track(1), track(2), track(3), track(4), track(5)];
        const results = completed(await runtime.run(fn(code), events, ctx, relaxed));
        expect(results.map((r) => (r.result === 'error' ? r.code : r.result))).toEqual([
          'function_output_invalid',
          'function_output_invalid',
          'function_output_invalid',
          'function_output_invalid',
          'ok',
        ]);
      });

      it('a throw fails that event only, with the error name and message', async () => {
        const code = `export function transform(event) {
          if (event.messageId === 'm-1') throw new TypeError('no total on ' + event.messageId);
          if (event.messageId === 'm-2') throw 'a bare string';
          return event;
        }`;
        const results = completed(await runtime.run(fn(code), [track(1), track(2), track(3)], ctx, relaxed));
        expect(results).toEqual([
          { result: 'error', code: 'function_error', message: 'TypeError: no total on m-1' },
          { result: 'error', code: 'function_error', message: expect.stringContaining('a bare string') },
          { result: 'ok', events: [track(3)] },
        ]);
      });

      it('an error message is capped at about 1 KB', async () => {
        const code = `export function transform() { throw new Error('x'.repeat(100000)); }`;
        const [result] = completed(await runtime.run(fn(code), [track(1)], ctx, relaxed));
        expect(result).toEqual({ result: 'error', code: 'function_error', message: expect.any(String) });
        const message = (result as { message: string }).message;
        expect(message.startsWith('Error: xxx')).toBe(true);
        expect(message.length).toBeGreaterThan(500);
        expect(message.length).toBeLessThanOrEqual(1100);
      });

      it('a syntax error makes every event function_error', async () => {
        const run = await runtime.run(
          fn('export function transform(event) { return event; '),
          [track(1), track(2)],
          ctx,
          relaxed,
        );
        expect(completed(run)).toEqual([
          { result: 'error', code: 'function_error', message: expect.stringContaining('SyntaxError') },
          { result: 'error', code: 'function_error', message: expect.stringContaining('SyntaxError') },
        ]);
      });

      it("a function's error text that imitates the sandbox's own is still function_error", async () => {
        const topLevel = `throw new Error('Script execution timed out.');
          export function transform(event) { return event; }`;
        const run = await runtime.run(fn(topLevel), [track(1)], ctx, relaxed);
        expect(completed(run)).toEqual([
          { result: 'error', code: 'function_error', message: 'Error: Script execution timed out.' },
        ]);
        const perEvent = `export function transform() {
          throw new RangeError('Isolate was disposed during execution due to memory limit');
        }`;
        const again = await runtime.run(fn(perEvent), [track(1)], ctx, relaxed);
        expect(completed(again)).toEqual([
          {
            result: 'error',
            code: 'function_error',
            message: 'RangeError: Isolate was disposed during execution due to memory limit',
          },
        ]);
      });

      it('a module without a transform makes every event function_error', async () => {
        const run = await runtime.run(fn('export const notTransform = 1;'), [track(1)], ctx, relaxed);
        expect(completed(run)).toEqual([
          { result: 'error', code: 'function_error', message: expect.stringContaining('transform') },
        ]);
      });
    });

    describe('walls', () => {
      it('finds no process, require, timers, fetch or isolate handle, by any path', async () => {
        const code = `export function transform(event, ctx) {
          const viaCtor = (() => { try { return typeof ctx.constructor.constructor('return process')(); } catch (e) { return 'threw ' + e.name; } })();
          const viaEventCtor = (() => { try { return typeof event.constructor.constructor('return this')().process; } catch (e) { return 'threw ' + e.name; } })();
          const viaFunction = (() => { try { return typeof Function('return this')().process; } catch (e) { return 'threw ' + e.name; } })();
          let dynamicImport;
          try {
            const pending = import('fs');
            dynamicImport = 'promise';
            pending.then((m) => { globalThis.imported = Object.keys(m).length; }, () => { globalThis.importRejected = true; });
          } catch (e) {
            dynamicImport = 'threw';
          }
          return {
            process: typeof process, require: typeof require, module: typeof module, global: typeof global,
            setTimeout: typeof setTimeout, setInterval: typeof setInterval, fetch: typeof fetch,
            ivm: typeof ivm, _ivm: typeof _ivm, Buffer: typeof Buffer,
            viaCtor, viaEventCtor, viaFunction, dynamicImport,
            imported: globalThis.imported ?? 'nothing',
          };
        }`;
        const version = fn(code);
        const [first] = completed(await runtime.run(version, [track(1)], ctx, relaxed));
        const found = okEvents(first)[0] as Record<string, unknown>;
        expect(found).toEqual({
          process: 'undefined',
          require: 'undefined',
          module: 'undefined',
          global: 'undefined',
          setTimeout: 'undefined',
          setInterval: 'undefined',
          fetch: 'undefined',
          ivm: 'undefined',
          _ivm: 'undefined',
          Buffer: 'undefined',
          // `Function('return process')()` is a ReferenceError or undefined, never an object.
          viaCtor: expect.stringMatching(/^(undefined|threw ReferenceError)$/),
          viaEventCtor: 'undefined',
          viaFunction: 'undefined',
          dynamicImport: expect.stringMatching(/^(promise|threw)$/),
          imported: 'nothing',
        });
        // The import's promise has settled by the next batch: it never brought a module.
        const [second] = completed(await runtime.run(version, [track(2)], ctx, relaxed));
        expect((okEvents(second)[0] as Record<string, unknown>).imported).toBe('nothing');
      });

      it('a static import fails compilation: every event is function_error', async () => {
        const code = `import { readFileSync } from 'fs';
          export function transform(event) { return { ...event, secret: readFileSync('/etc/passwd', 'utf8') }; }`;
        const run = await runtime.run(fn(code), [track(1), track(2)], ctx, relaxed);
        expect(completed(run)).toEqual([
          { result: 'error', code: 'function_error', message: expect.any(String) },
          { result: 'error', code: 'function_error', message: expect.any(String) },
        ]);
      });

      it('Object.prototype pollution stays in its version: not in the host, not in another version', async () => {
        const polluter = `Object.prototype.polluted = 1; Array.prototype.polluted = 2;
          export function transform(event) { return { ...event, sawOwn: ({}).polluted }; }`;
        const [own] = completed(await runtime.run(fn(polluter), [track(1)], ctx, relaxed));
        const output = okEvents(own)[0] as Record<string, unknown>;
        expect(output.sawOwn).toBe(1);
        // The host's copy is a plain object whose prototype chain (the host's) has nothing added.
        expect(Object.getPrototypeOf(Object.getPrototypeOf(output))).toBeNull();
        expect('polluted' in output).toBe(false);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        expect(([] as unknown as Record<string, unknown>).polluted).toBeUndefined();
        const reader = `export function transform() { return { object: ({}).polluted ?? 'clean', array: [].polluted ?? 'clean' }; }`;
        const [other] = completed(await runtime.run(fn(reader), [track(1)], ctx, relaxed));
        expect(okEvents(other)).toEqual([{ object: 'clean', array: 'clean' }]);
      });

      it("a version's globals persist between its batches and are never another version's", async () => {
        const counter = `export function transform() {
          globalThis.counter = (globalThis.counter ?? 0) + 1;
          return { counter: globalThis.counter };
        }`;
        const a = fn(counter);
        const b = fn(counter);
        const outputs = async (version: { versionId: string; code: string }, n: number) =>
          completed(
            await runtime.run(
              version,
              Array.from({ length: n }, (_, i) => track(i)),
              ctx,
              relaxed,
            ),
          ).map((r) => okEvents(r)[0]);
        expect(await outputs(a, 2)).toEqual([{ counter: 1 }, { counter: 2 }]);
        expect(await outputs(a, 1)).toEqual([{ counter: 3 }]);
        expect(await outputs(b, 1)).toEqual([{ counter: 1 }]);
        expect(await outputs(a, 1)).toEqual([{ counter: 4 }]);
      });
    });

    describe('limits', () => {
      it('while(true) fails the batch with function_timeout within the budget plus 20 % and an allowance; the next batch is served', async () => {
        const limits = {
          ...defaultFunctionLimits,
          cpuMsPerEvent: timeoutBudgetMs,
          maxBatchCpuMs: timeoutBudgetMs,
        };
        expect(batchCpuBudgetMs(limits, 1)).toBe(timeoutBudgetMs);
        const version = fn(`export function transform(event) {
          console.log('before the loop');
          if (event.loop) while (true) {}
          return event;
        }`);
        const started = process.hrtime.bigint();
        const run = await runtime.run(version, [track(1, { loop: true })], ctx, limits);
        const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
        process.stdout.write(
          `${name}: a ${timeoutBudgetMs} ms budget timed out after ${wallMs.toFixed(1)} ms of wall time\n`,
        );
        expect(run).toMatchObject({ outcome: 'failed', code: 'function_timeout' });
        expect(wallMs).toBeGreaterThanOrEqual(timeoutBudgetMs);
        expect(wallMs).toBeLessThanOrEqual(timeoutBudgetMs * 1.2 + timeoutAllowanceMs);
        const next = await runtime.run(version, [track(2)], ctx, limits);
        expect(completed(next)).toEqual([{ result: 'ok', events: [track(2)] }]);
      });

      it('an allocation bomb fails the batch with function_memory; the next batch is served', async () => {
        const version = fn(`export function transform(event) {
          if (!event.bomb) return event;
          const kept = [];
          for (let i = 0; ; i += 1) kept.push({ i, text: 'abc' + i });
        }`);
        const run = await runtime.run(version, [track(1, { bomb: true })], ctx, roomy);
        expect(run).toMatchObject({ outcome: 'failed', code: 'function_memory' });
        const next = await runtime.run(version, [track(2)], ctx, roomy);
        expect(completed(next)).toEqual([{ result: 'ok', events: [track(2)] }]);
      });

      it('deep recursion fails that event with function_error', async () => {
        const code = `function down(n) { return down(n + 1) + 1; }
          export function transform(event) { return event.deep ? { depth: down(0) } : event; }`;
        const results = completed(
          await runtime.run(fn(code), [track(1, { deep: true }), track(2)], ctx, roomy),
        );
        expect(results).toEqual([
          {
            result: 'error',
            code: 'function_error',
            message: expect.stringMatching(/^RangeError: .*call stack/i),
          },
          { result: 'ok', events: [track(2)] },
        ]);
      });

      it('an output over maxOutputBytesPerEvent is function_output_invalid', async () => {
        const code = `export function transform(event) {
          return event.huge ? { ...event, blob: 'x'.repeat(1024 * 1024) } : event;
        }`;
        const results = completed(
          await runtime.run(fn(code), [track(1, { huge: true }), track(2)], ctx, relaxed),
        );
        expect(results).toEqual([
          { result: 'error', code: 'function_output_invalid', message: expect.stringContaining('32768') },
          { result: 'ok', events: [track(2)] },
        ]);
      });

      it("once the batch's output passes maxOutputBytesPerBatch the rest is function_output_invalid", async () => {
        const eventBytes = Buffer.byteLength(JSON.stringify(track(0)), 'utf8');
        const limits = { ...relaxed, maxOutputBytesPerBatch: eventBytes * 2 + 10 };
        const events = [track(0), track(1), track(2), track(3)];
        const results = completed(await runtime.run(fn('export default (e) => e'), events, ctx, limits));
        expect(results.map((r) => (r.result === 'error' ? r.code : r.result))).toEqual([
          'ok',
          'ok',
          'function_output_invalid',
          'function_output_invalid',
        ]);
      });

      it('console lines are captured with their event and level, and capped in lines and bytes', async () => {
        const code = `export function transform(event, ctx) {
          console.log('event', event.messageId, { total: event.properties.total });
          console.warn('warned');
          return event;
        }`;
        const limits = { ...relaxed, maxLogLines: 3 };
        const run = await runtime.run(fn(code), [track(1), track(2), track(3)], ctx, limits);
        expect(run).toMatchObject({
          outcome: 'completed',
          logs: [
            { event: 0, level: 'log', message: 'event m-1 {"total":10}' },
            { event: 0, level: 'warn', message: 'warned' },
            { event: 1, level: 'log', message: 'event m-2 {"total":20}' },
          ],
          logsDropped: 3,
        });
        const bytes = `export function transform(event) { console.error('y'.repeat(100)); console.info('short'); return event; }`;
        const capped = await runtime.run(fn(bytes), [track(1)], ctx, {
          ...defaultFunctionLimits,
          maxLogBytes: 50,
        });
        expect(capped).toMatchObject({
          outcome: 'completed',
          logs: [{ event: 0, level: 'info', message: 'short' }],
          logsDropped: 1,
        });
      });
    });

    describe('data across the boundary', () => {
      it('every event the door accepts passes identity unchanged, odd keys, escaped keys and full Unicode included', async () => {
        const version = fn('export function transform(event) { return event; }');
        let accepted = 0;
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(candidateEvent, fc.boolean()), { minLength: 1, maxLength: 5 }),
            async (candidates) => {
              const events = candidates
                .map(([candidate, escapeKeys]) => throughTheDoor(candidate, escapeKeys))
                .filter((event): event is object => event !== undefined);
              fc.pre(events.length > 0);
              accepted += events.length;
              const results = completed(await runtime.run(version, events, ctx, roomy));
              expect(results).toEqual(events.map((event) => ({ result: 'ok', events: [event] })));
            },
          ),
          { numRuns: 150 },
        );
        expect(accepted).toBeGreaterThan(150);
      });
    });
  });
}
