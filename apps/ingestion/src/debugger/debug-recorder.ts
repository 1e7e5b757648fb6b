import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isAppError } from '@pipeline/errors';
import {
  debuggerKeys,
  debugPayload,
  type DebugEventError,
  type DebugEventRecord,
  type DebugStreamWriter,
} from '@pipeline/redis';
import type { PlanVerdict } from '@pipeline/events';
import { planActionOf, type PlanPolicy } from '@pipeline/tracking-plans';

/**
 * The path of a validation message (event-validator.ts writes `<path> <what is wrong>`, with
 * `event` for the whole event): `properties.plan must be string` -> `properties.plan`.
 */
export function errorPath(message: string): string {
  const first = /^([A-Za-z0-9_$.[\]-]+) /.exec(message)?.[1];
  if (!first) return '';
  // `event is required` names the track event's name; other `event ...` messages the whole event.
  if (first === 'event') return message === 'event is required' ? 'event' : '';
  return first;
}

const stringField = (value: unknown, field: string): string | null => {
  if (value === null || typeof value !== 'object') return null;
  const found = (value as Record<string, unknown>)[field];
  return typeof found === 'string' ? found : null;
};

function requestIdOf(headers: IncomingHttpHeaders): string {
  const header = headers['x-request-id'];
  const value = Array.isArray(header) ? header[0] : header;
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : randomUUID();
}

/** The request's error as the debugger shows it: its code, message and listed details. */
function requestErrors(error: unknown): DebugEventError[] {
  if (!isAppError(error)) return [{ path: '', message: 'internal error', code: 'server_error' }];
  const details = error.details?.details;
  const listed = Array.isArray(details)
    ? details
        .map((detail) => stringField(detail, 'message'))
        .filter((message): message is string => message !== null && message !== error.message)
    : [];
  return [
    { path: '', message: error.message, code: error.code },
    ...listed.map((message) => ({ path: '', message, code: error.code })),
  ];
}

/**
 * Records what /collect and Segment's routes received, per write key, for the live debugger:
 * every event of a request (accepted or rejected, with its errors), or one item for a request
 * whose body could not be read. Synchronous and never throws: entries are queued on the
 * DebugStreamWriter, which sends them after the answer and samples above its per-key rate.
 */
export class DebugRecorder {
  constructor(private readonly writer: DebugStreamWriter) {}

  /**
   * A request's events: `eventErrors` by index for the events refused one by one;
   * `requestError` when the whole request was refused after its events were read; `hidden`, the
   * indexes of events a privacy regulation names, which the debugger never shows; `planned`,
   * the tracking-plan verdicts of the events committed, by index, when the key binds a plan.
   */
  recordEvents(
    writeKeyId: string,
    headers: IncomingHttpHeaders,
    receivedAt: Date,
    events: readonly unknown[],
    eventErrors: readonly { index: number; errors: readonly { message: string }[] }[],
    requestError?: unknown,
    hidden?: ReadonlySet<number>,
    planned?: {
      planId: string;
      policy: PlanPolicy;
      /** `verdicts[i]` is for the event at `indexes[i]`. */
      indexes: readonly number[];
      verdicts: readonly PlanVerdict[];
    },
  ): void {
    try {
      if (!this.writer.available) return;
      const key = debuggerKeys.events(writeKeyId);
      const shown = hidden ? events.flatMap((_, index) => (hidden.has(index) ? [] : [index])) : undefined;
      const admitted = this.writer.admit(key, shown ? shown.length : events.length);
      // Above the rate (the common case under load): nothing more is done for the request.
      if (admitted === 0) return;
      const errorsAt = new Map(eventErrors.map(({ index, errors }) => [index, errors]));
      const verdictAt = planned && new Map(planned.indexes.map((index, i) => [index, planned.verdicts[i]]));
      const requestId = requestIdOf(headers);
      const at = receivedAt.toISOString();
      const refused = requestError === undefined ? [] : requestErrors(requestError);
      for (let n = 0; n < admitted; n++) {
        const index = shown ? (shown[n] as number) : n;
        const input = events[index];
        const own = (errorsAt.get(index) ?? []).map(({ message }) => ({
          path: errorPath(message),
          message,
        }));
        const errors = [...own, ...refused];
        const { payload, truncated } = debugPayload(input);
        const verdict = verdictAt?.get(index);
        const record: DebugEventRecord = {
          receivedAt: at,
          requestId,
          status: errors.length === 0 ? 'accepted' : 'rejected',
          type: stringField(input, 'type'),
          event: stringField(input, 'event'),
          messageId: stringField(input, 'messageId'),
          errors,
          payload,
          ...(truncated ? { truncated: true as const } : {}),
          ...(planned && verdict
            ? {
                plan: { planId: planned.planId, version: verdict.version },
                violations: [...verdict.violations],
                // Decided here, for the events recorded only, as the consumers decide it.
                planAction: planActionOf(verdict, planned.policy),
              }
            : {}),
        };
        this.writer.add(key, ['d', JSON.stringify(record)]);
      }
    } catch {
      // The debugger never fails a request.
    }
  }

  /** A request of a known write key refused before its events could be read (bad JSON, too large). */
  recordUnreadRequest(
    writeKeyId: string,
    headers: IncomingHttpHeaders,
    receivedAt: Date,
    error: unknown,
  ): void {
    try {
      if (!this.writer.available) return;
      const key = debuggerKeys.events(writeKeyId);
      if (this.writer.admit(key, 1) === 0) return;
      const errors = requestErrors(error);
      const record: DebugEventRecord = {
        receivedAt: receivedAt.toISOString(),
        requestId: requestIdOf(headers),
        status: 'rejected',
        type: null,
        event: null,
        messageId: null,
        errors,
        payload: {},
      };
      this.writer.add(key, ['d', JSON.stringify(record)]);
    } catch {
      // As above.
    }
  }

  get available(): boolean {
    return this.writer.available;
  }

  /** Events not recorded because Redis is not ready (counted as failed). */
  unavailable(events: number): void {
    this.writer.stats.failed += events;
  }
}
