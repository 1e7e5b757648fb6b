import { AppError } from '@pipeline/errors';
import { validateEvent } from '@pipeline/events';
import {
  checkFunctionResult,
  type EventResult,
  type FunctionContext,
  type FunctionRuntime,
} from '@pipeline/functions';
import { badRequest, invalidField } from '../http/api-errors';
import type { DebuggerService } from '../debugger/debugger.service';
import type { FunctionTestView, TestEventInput, TestEventResult, TestFunctionBody } from './function.dto';
import { codeHash, type FunctionService } from './function.service';
import {
  checkCode,
  DEFAULT_TEST_DEBUGGER_EVENTS,
  MAX_TEST_DEBUGGER_EVENTS,
  MAX_TEST_EVENTS,
} from './function-limits';

export const functionRuntimeUnavailable = () =>
  new AppError(
    503,
    'function_runtime_unavailable',
    'This control plane has no function runtime to run tests on',
  );

const isObject = (value: unknown): value is TestEventInput =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The test call (docs/management-api.md#functions): runs the draft, pasted code or a published
 * version on pasted events or on the debugger's newest accepted events of a write key, and
 * answers what the function made of each, after the checks delivery makes on it (an input that
 * is no event is answered as the function returned it). Nothing is delivered or stored.
 */
export class FunctionTestRun {
  constructor(
    private readonly functions: FunctionService,
    private readonly debuggerEvents: DebuggerService,
    /** Absent: tests answer 503 `function_runtime_unavailable`. */
    private readonly runtime?: FunctionRuntime,
  ) {}

  async run(accountId: string, functionId: string, body: TestFunctionBody): Promise<FunctionTestView> {
    if (body.code !== undefined && body.versionId !== undefined)
      throw badRequest('validation_failed', 'The request is not valid', [
        { path: 'body.versionId', message: 'must not be given with code' },
      ]);
    if ((body.events === undefined) === (body.writeKeyId === undefined))
      throw invalidField('body.events', 'give either events or writeKeyId');
    if (body.limit !== undefined && body.writeKeyId === undefined)
      throw invalidField('body.limit', 'is only taken with writeKeyId');
    if (body.events !== undefined) {
      if (body.events.length === 0 || body.events.length > MAX_TEST_EVENTS)
        throw invalidField('body.events', `must hold 1 to ${MAX_TEST_EVENTS} events`);
      body.events.forEach((event, index) => {
        if (!isObject(event)) throw invalidField(`body.events.${index}`, 'must be an object');
      });
    }
    const limit = body.limit ?? DEFAULT_TEST_DEBUGGER_EVENTS;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_TEST_DEBUGGER_EVENTS)
      throw invalidField('body.limit', `must be a whole number from 1 to ${MAX_TEST_DEBUGGER_EVENTS}`);
    const source = await this.functions.codeFor(accountId, functionId, body.versionId);
    const code = body.code === undefined ? source.code : checkCode(body.code, 'body.code');
    const { writeKeyId } = body;
    const events =
      body.events ??
      (await this.debuggerEvents.events(accountId, writeKeyId ?? '', { status: 'accepted', limit }))
        // Oldest first, as they arrived; a payload the debugger cut short is not the event.
        .reverse()
        .filter((event) => event.truncated !== true)
        .map((event) => event.payload);
    if (!this.runtime) throw functionRuntimeUnavailable();
    const ctx: FunctionContext =
      source.kind === 'destination'
        ? {
            kind: 'destination',
            destination: body.destination ?? 'warehouse',
            writeKeyId: body.writeKeyId ?? '',
          }
        : { kind: 'source', writeKeyId: body.writeKeyId ?? '' };
    // Pasted code runs under an id of its own: a runtime caches isolates per version id.
    // The function's id in it: two accounts' identical code never shares an isolate's globals.
    const versionId = source.versionId ?? `test:${functionId.toLowerCase()}:${codeHash(code)}`;
    const run = await this.runtime.run({ versionId, code }, events, ctx);
    const results: TestEventResult[] = events.map((input, index) => {
      if (run.outcome === 'failed')
        return { input, result: 'error', error: { code: run.code, message: run.message } };
      const raw: EventResult = run.results[index] ?? {
        result: 'error',
        code: 'function_error',
        message: 'the sandbox gave no result for this event',
      };
      // What delivery would keep: for an input that is an event, the host's checks and the
      // fields the pipeline owns (message ids, consent); any other input is answered as run.
      const event = validateEvent(input, Infinity, 'segment');
      const result = event.valid ? checkFunctionResult(event.event, raw) : raw;
      if (result.result === 'ok') return { input, result: 'ok', events: result.events };
      if (result.result === 'dropped') return { input, result: 'dropped' };
      return { input, result: 'error', error: { code: result.code, message: result.message } };
    });
    return {
      runtime: this.runtime.name,
      versionId: source.versionId,
      outcome: run.outcome,
      results,
      logs: run.logs,
      logsDropped: run.logsDropped,
      cpuMicros: run.cpuMicros,
    };
  }
}
