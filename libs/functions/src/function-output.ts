import { createHash } from 'node:crypto';
import { validateEvent, type TrackingEvent } from '@pipeline/events';
import type { EventFailureCode, EventResult } from './function-contract';

/**
 * The id of the `index`th event a function made of one input when it made several: derived from
 * the input's message id only, so a redelivered input gives the same ids and the warehouse and
 * the vendors drop the copies. Shaped as a UUID (version 8, RFC 9562: custom), which every
 * destination takes as a message id.
 */
export function derivedMessageId(messageId: string, index: number): string {
  const hex = createHash('sha256').update(`${messageId}:${index}`).digest('hex');
  const variant = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export type CheckedResult =
  | { result: 'ok'; events: TrackingEvent[] }
  | { result: 'dropped' }
  | { result: 'error'; code: EventFailureCode; message: string };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The input's consent on a copy of `output`'s context: a function can neither grant nor withdraw it. */
function withInputConsent(input: TrackingEvent, output: Record<string, unknown>): Record<string, unknown> {
  const consent = input.context?.consent;
  const context = isPlainObject(output.context) ? { ...output.context } : undefined;
  if (consent === undefined) {
    if (context && 'consent' in context) delete context.consent;
    return context ? { ...output, context } : output;
  }
  return { ...output, context: { ...(context ?? {}), consent: { ...consent } } };
}

/**
 * What the pipeline uses of a function's answer for `input` (docs/functions.md, "What the
 * pipeline keeps"): each output event with the fields the pipeline owns put back (the message
 * id, the input's own for one output and derived ones for several; the input's consent; the
 * input's timestamp when the output has none), then held to the same event contract the door
 * holds events to. Any output that fails makes the whole input `function_output_invalid`: half
 * of a split is never delivered.
 */
export function checkFunctionResult(input: TrackingEvent, result: EventResult): CheckedResult {
  if (result.result !== 'ok') return result;
  const outputs = result.events;
  if (outputs.length === 0) return { result: 'dropped' };
  const events: TrackingEvent[] = [];
  for (const [index, output] of outputs.entries()) {
    const where = outputs.length === 1 ? 'the output' : `output ${index}`;
    if (!isPlainObject(output))
      return invalid(
        `${where} is ${Array.isArray(output) ? 'an array' : typeof output}, not an event object`,
      );
    const owned = withInputConsent(input, {
      ...output,
      messageId: outputs.length === 1 ? input.messageId : derivedMessageId(input.messageId, index),
      ...(output.timestamp === undefined ? { timestamp: input.timestamp } : {}),
    });
    // Stryker disable next-line StringLiteral: every dialect but 'collect' is Segment's; the userId-alone test holds the choice
    const checked = validateEvent(owned, Infinity, 'segment');
    if (!checked.valid)
      return invalid(`${where}: ${checked.errors.map((error) => error.message).join('; ')}`);
    events.push(checked.event);
  }
  return { result: 'ok', events };
}

const invalid = (message: string): CheckedResult => ({
  result: 'error',
  code: 'function_output_invalid',
  message,
});
