import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { TrackingEvent } from '@pipeline/events';
import { checkFunctionResult, derivedMessageId } from './function-output';

const input: TrackingEvent = {
  type: 'track',
  event: 'Order Completed',
  messageId: 'm-1',
  timestamp: '2026-11-30T10:00:00.000Z',
  anonymousId: 'a-1',
  properties: { total: 12.5 },
  context: { consent: { analytics: true, marketing: false } },
};

describe('derivedMessageId', () => {
  it('is a version 8 UUID of the input id and the index, the same every time', () => {
    const id = derivedMessageId('m-1', 0);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(derivedMessageId('m-1', 0)).toBe(id);
    // The id is sha256's first 32 hex digits with the version and variant set.
    expect(id.replace(/-/g, '').slice(0, 12)).toBe(
      createHash('sha256').update('m-1:0').digest('hex').slice(0, 12),
    );
  });

  it('differs between indexes and between inputs', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1 }), fc.nat(9), fc.nat(9), (id, i, j) => {
        fc.pre(i !== j);
        expect(derivedMessageId(id, i)).not.toBe(derivedMessageId(id, j));
        expect(derivedMessageId(id, i)).not.toBe(derivedMessageId(`${id}x`, i));
      }),
    );
  });

  it('sets the variant bits to 10 whatever the hash digit', () => {
    const variants = new Set<string>();
    for (let i = 0; i < 200; i += 1) variants.add(derivedMessageId('v', i).split('-')[3]![0]!);
    expect([...variants].sort()).toEqual(['8', '9', 'a', 'b']);
  });
});

describe('checkFunctionResult', () => {
  it('passes drops and errors through', () => {
    expect(checkFunctionResult(input, { result: 'dropped' })).toEqual({ result: 'dropped' });
    expect(checkFunctionResult(input, { result: 'ok', events: [] })).toEqual({ result: 'dropped' });
    const error = { result: 'error', code: 'function_error', message: 'TypeError: x' } as const;
    expect(checkFunctionResult(input, error)).toBe(error);
  });

  it('keeps the input message id on one output and the changes the function made', () => {
    const out = { ...input, event: 'order_completed', messageId: 'changed', properties: { total: 13 } };
    expect(checkFunctionResult(input, { result: 'ok', events: [out] })).toEqual({
      result: 'ok',
      events: [{ ...out, messageId: 'm-1' }],
    });
  });

  it('gives several outputs derived ids, in order', () => {
    const a = { ...input, event: 'A' };
    const b = { ...input, event: 'B' };
    const checked = checkFunctionResult(input, { result: 'ok', events: [a, b] });
    expect(checked).toEqual({
      result: 'ok',
      events: [
        { ...a, messageId: derivedMessageId('m-1', 0) },
        { ...b, messageId: derivedMessageId('m-1', 1) },
      ],
    });
  });

  it('puts back the input consent whatever the function did with it', () => {
    const granted = {
      ...input,
      context: { consent: { analytics: true, marketing: true }, page: { path: '/' } },
    };
    const removed = { ...input, context: { page: { path: '/' } } };
    const noContext = { type: 'track', event: 'X', anonymousId: 'a' };
    for (const out of [granted, removed, noContext]) {
      const checked = checkFunctionResult(input, { result: 'ok', events: [out] });
      expect(checked.result).toBe('ok');
      if (checked.result === 'ok')
        expect(checked.events[0]!.context?.consent).toEqual({ analytics: true, marketing: false });
    }
    const checked = checkFunctionResult(input, { result: 'ok', events: [granted] });
    if (checked.result === 'ok') expect(checked.events[0]!.context).toMatchObject({ page: { path: '/' } });
  });

  it('removes consent an input without one gains', () => {
    const bare: TrackingEvent = { ...input, context: { page: { path: '/' } } };
    const out = { ...bare, context: { consent: { marketing: true }, page: { path: '/' } } };
    const checked = checkFunctionResult(bare, { result: 'ok', events: [out] });
    expect(checked).toEqual({ result: 'ok', events: [{ ...out, context: { page: { path: '/' } } }] });
    const noContext = { ...bare, context: undefined };
    delete noContext.context;
    expect(checkFunctionResult(noContext, { result: 'ok', events: [{ ...noContext }] })).toEqual({
      result: 'ok',
      events: [noContext],
    });
  });

  it("fills a missing timestamp with the input's and keeps one the function set", () => {
    const { timestamp: _, ...untimed } = input;
    const filled = checkFunctionResult(input, { result: 'ok', events: [untimed] });
    expect(filled).toEqual({ result: 'ok', events: [input] });
    const later = { ...input, timestamp: '2026-12-01T00:00:00.000Z' };
    const kept = checkFunctionResult(input, { result: 'ok', events: [later] });
    expect(kept).toEqual({ result: 'ok', events: [later] });
  });

  it('refuses an output that is not an event, naming which', () => {
    expect(checkFunctionResult(input, { result: 'ok', events: [input, 'x'] })).toEqual({
      result: 'error',
      code: 'function_output_invalid',
      message: 'output 1 is string, not an event object',
    });
    expect(checkFunctionResult(input, { result: 'ok', events: [[input]] })).toEqual({
      result: 'error',
      code: 'function_output_invalid',
      message: 'the output is an array, not an event object',
    });
    expect(checkFunctionResult(input, { result: 'ok', events: [null] })).toMatchObject({
      message: 'the output is object, not an event object',
    });
  });

  it('holds outputs to the event contract', () => {
    const checked = checkFunctionResult(input, {
      result: 'ok',
      events: [{ type: 'track', anonymousId: 'a' }],
    });
    expect(checked).toEqual({
      result: 'error',
      code: 'function_output_invalid',
      message: 'the output: event is required',
    });
    const nobody = checkFunctionResult(input, { result: 'ok', events: [{ type: 'track', event: 'X' }] });
    expect(nobody).toEqual({
      result: 'error',
      code: 'function_output_invalid',
      message: 'the output: userId or anonymousId is required',
    });
    const big = { ...input, properties: { blob: 'x'.repeat(40_000) } };
    expect(checkFunctionResult(input, { result: 'ok', events: [big] })).toMatchObject({
      code: 'function_output_invalid',
      message: expect.stringMatching(/^the output: event is \d+ bytes; at most 32768 are accepted$/),
    });
  });

  it('takes an output that names the user by userId alone, as the Segment routes do', () => {
    const { anonymousId: _, ...known } = { ...input, userId: 'u-1' };
    expect(checkFunctionResult(input, { result: 'ok', events: [known] })).toEqual({
      result: 'ok',
      events: [known],
    });
  });

  it('lists every contract error of an output, separated', () => {
    const checked = checkFunctionResult(input, { result: 'ok', events: [{ type: 'track' }] });
    expect(checked).toEqual({
      result: 'error',
      code: 'function_output_invalid',
      message: 'the output: userId or anonymousId is required; event is required',
    });
  });

  it('refuses the whole input when one of several outputs fails', () => {
    const checked = checkFunctionResult(input, {
      result: 'ok',
      events: [input, { type: 'nope', anonymousId: 'a' }],
    });
    expect(checked).toMatchObject({ result: 'error', code: 'function_output_invalid' });
    if (checked.result === 'error') expect(checked.message).toMatch(/^output 1: type must be one of /);
  });

  it('repairs unpaired surrogates as the door does', () => {
    const out = { ...input, properties: { name: 'a\uD800b' } };
    const checked = checkFunctionResult(input, { result: 'ok', events: [out] });
    expect(checked).toEqual({ result: 'ok', events: [{ ...out, properties: { name: 'a\uFFFDb' } }] });
  });
});
