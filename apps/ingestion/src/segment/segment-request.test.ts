import { maxEventDepth } from '@pipeline/events';
import {
  derivedMessageId,
  parseSegmentBody,
  SEGMENT_MAX_BODY_BYTES,
  SEGMENT_MAX_MERGED_BYTES,
  SEGMENT_MAX_MESSAGES,
  segmentRouteOf,
} from './segment-request';

const receivedAt = new Date('2026-03-01T10:00:05.000Z');
const bufferOf = (body: unknown) => Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
/** A parsed request with its messages completed, as CollectService.validate does once the key is checked. */
const parse = (body: unknown, route: Parameters<typeof parseSegmentBody>[1] = 'batch') => {
  const { completeEvents, ...request } = parseSegmentBody(bufferOf(body), route, receivedAt);
  completeEvents?.();
  return request;
};

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    const { code, message, status, details } = error as Error & {
      code: string;
      status: number;
      details?: { details?: unknown };
    };
    return { status, code, message, details: details?.details };
  }
  return undefined;
};

describe('parseSegmentBody', () => {
  it('sets the route’s type and keeps everything else of a single message', () => {
    const request = parse(
      {
        type: 'page',
        userId: 'u',
        event: 'E',
        messageId: 'm',
        timestamp: '2026-01-01T00:00:00Z',
        writeKey: 'wk',
      },
      'track',
    );
    expect(request).toEqual({
      events: [
        {
          type: 'track',
          userId: 'u',
          event: 'E',
          messageId: 'm',
          timestamp: '2026-01-01T00:00:00Z',
          writeKey: 'wk',
        },
      ],
      bodyBytes: expect.any(Number),
      dialect: 'segment',
      bodyWriteKey: 'wk',
    });
  });

  it('fills messageId (derived from the message as sent) and timestamp (originalTimestamp, else receipt)', () => {
    const sent = { userId: 'u', event: 'E' };
    const [first] = parse(sent, 'track').events as Record<string, unknown>[];
    expect(first).toEqual({
      ...sent,
      type: 'track',
      messageId: derivedMessageId(sent),
      timestamp: receivedAt.toISOString(),
    });
    const [again] = parse(sent, 'track').events as Record<string, unknown>[];
    expect(again!.messageId).toBe(first!.messageId);
    const [other] = parse({ ...sent, event: 'F' }, 'track').events as Record<string, unknown>[];
    expect(other!.messageId).not.toBe(first!.messageId);
    const [original] = parse({ ...sent, messageId: '', originalTimestamp: '2026-02-02T00:00:00Z' }, 'track')
      .events as Record<string, unknown>[];
    expect(original).toMatchObject({
      timestamp: '2026-02-02T00:00:00Z',
      originalTimestamp: '2026-02-02T00:00:00Z',
    });
    expect(original!.messageId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    const [badOriginal] = parse({ ...sent, messageId: null, originalTimestamp: 'yesterday' }, 'track')
      .events as Record<string, unknown>[];
    expect(badOriginal!.timestamp).toBe(receivedAt.toISOString());
    expect(badOriginal!.messageId).toBe(
      derivedMessageId({ ...sent, messageId: null, originalTimestamp: 'yesterday' }),
    );
    const [nullTime] = parse({ ...sent, messageId: 'n', timestamp: null }, 'track').events as Record<
      string,
      unknown
    >[];
    expect(nullTime!.timestamp).toBe(receivedAt.toISOString());
    const [kept] = parse({ ...sent, messageId: 'mine', timestamp: 'not a date' }, 'track').events as Record<
      string,
      unknown
    >[];
    // A wrong timestamp is the validator's to refuse, by index: it is not replaced.
    expect(kept).toMatchObject({ messageId: 'mine', timestamp: 'not a date' });
  });

  it('merges a batch’s context and integrations under each message’s own', () => {
    const request = parse({
      batch: [
        {
          type: 'track',
          userId: 'u',
          event: 'A',
          messageId: 'a',
          timestamp: 't',
          context: { locale: 'fr' },
          integrations: { Mixpanel: false },
        },
        { type: 'identify', userId: 'u', messageId: 'b', timestamp: 't' },
        'not an object',
        null,
      ],
      context: { locale: 'en', library: { name: 'x' } },
      integrations: { All: false },
      sentAt: '2026-03-01T10:00:04.000Z',
      writeKey: 'wk',
    });
    expect(request.events).toEqual([
      {
        type: 'track',
        userId: 'u',
        event: 'A',
        messageId: 'a',
        timestamp: 't',
        context: { locale: 'fr', library: { name: 'x' } },
        integrations: { All: false, Mixpanel: false },
      },
      {
        type: 'identify',
        userId: 'u',
        messageId: 'b',
        timestamp: 't',
        context: { locale: 'en', library: { name: 'x' } },
        integrations: { All: false },
      },
      'not an object',
      null,
    ]);
    // Batch-level context and integrations that are not objects are not merged.
    expect(
      parse({ batch: [{ type: 'track', messageId: 'c', timestamp: 't' }], context: 'x', integrations: [1] })
        .events,
    ).toEqual([{ type: 'track', messageId: 'c', timestamp: 't' }]);
    expect(request).toMatchObject({
      batchSentAt: '2026-03-01T10:00:04.000Z',
      bodyWriteKey: 'wk',
      dialect: 'segment',
    });
  });

  it('refuses what is not a request, with the documented codes', () => {
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return [(error as { code: string }).code, (error as Error).message];
      }
      return undefined;
    };
    expect(codeOf(() => parseSegmentBody(undefined, 'batch', receivedAt))).toEqual([
      'invalid_payload',
      'body is missing',
    ]);
    expect(codeOf(() => parse('{'))).toEqual(['invalid_payload', 'body is not valid JSON']);
    expect(codeOf(() => parse([1]))).toEqual(['invalid_payload', 'body must be a JSON object']);
    expect(codeOf(() => parse({ batch: {} }))).toEqual([
      'invalid_batch',
      'batch must be an array of messages',
    ]);
    expect(codeOf(() => parse({ batch: [] }))).toEqual([
      'invalid_batch',
      'batch must hold at least one message',
    ]);
    expect(codeOf(() => parse({ batch: [{}], writeKey: 1 }))).toEqual([
      'invalid_batch',
      'writeKey must be a string',
    ]);
    expect(codeOf(() => parseSegmentBody(Buffer.alloc(0), 'batch', receivedAt))).toEqual([
      'invalid_payload',
      'body is missing',
    ]);
    expect(SEGMENT_MAX_BODY_BYTES).toBe(512_000);
    expect(codeOf(() => parse({ batch: [{}], sentAt: 'soon' }))).toEqual([
      'invalid_batch',
      'sentAt must be an ISO 8601 date-time with a time zone, on a date that exists, in the years 0001-9999',
    ]);
    // A single message's sentAt is its own, for the validator to judge.
    expect(codeOf(() => parse({ userId: 'u', sentAt: 'soon' }, 'track'))).toBeUndefined();
    expect(parse({ batch: [{}], sentAt: null }).batchSentAt).toBeUndefined();
    expect(parse({ userId: 'u', sentAt: '2026-03-01T10:00:04.000Z' }, 'track').batchSentAt).toBeUndefined();
    expect(parse({ batch: [{}], writeKey: '' }).bodyWriteKey).toBeUndefined();
  });
});

describe('parseSegmentBody: the work a request may cost', () => {
  const track = (i: number) => ({ type: 'track', userId: 'u', event: 'E', messageId: `m${i}` });

  it(`takes ${SEGMENT_MAX_MESSAGES} messages and refuses one more before any per-message work`, () => {
    expect(SEGMENT_MAX_MESSAGES).toBe(2_500);
    const at = parseSegmentBody(
      bufferOf({ batch: Array.from({ length: SEGMENT_MAX_MESSAGES }, (_, i) => track(i)) }),
      'batch',
      receivedAt,
    );
    expect(at.events).toHaveLength(SEGMENT_MAX_MESSAGES);
    // Over the cap even when every message is empty (nothing to derive an id from is done).
    const over = Array.from({ length: SEGMENT_MAX_MESSAGES + 1 }, () => ({}));
    expect(codeOf(() => parseSegmentBody(bufferOf({ batch: over }), 'batch', receivedAt))).toEqual({
      status: 413,
      code: 'batch_too_large',
      message: `A batch holds at most ${SEGMENT_MAX_MESSAGES} events`,
      details: [
        {
          message: `received ${SEGMENT_MAX_MESSAGES + 1} events; at most ${SEGMENT_MAX_MESSAGES} are accepted`,
        },
      ],
    });
    expect(over[0]).toEqual({});
  });

  it('completes no message until completeEvents runs (after the key is checked)', () => {
    const message = { userId: 'u', event: 'E' };
    const request = parseSegmentBody(
      bufferOf({ context: { ip: '1.2.3.4' }, batch: [message] }),
      'batch',
      receivedAt,
    );
    expect(request.events).toEqual([message]);
    request.completeEvents?.();
    expect(request.events).toEqual([
      {
        ...message,
        messageId: derivedMessageId(message),
        context: { ip: '1.2.3.4' },
        timestamp: receivedAt.toISOString(),
      },
    ]);
    const single = parseSegmentBody(bufferOf(message), 'identify', receivedAt);
    expect(single.events).toEqual([message]);
    single.completeEvents?.();
    expect(single.events).toEqual([
      {
        ...message,
        type: 'identify',
        messageId: derivedMessageId(message),
        timestamp: receivedAt.toISOString(),
      },
    ]);
  });

  it('bounds what a batch weighs once its context and integrations are merged into each message', () => {
    expect(SEGMENT_MAX_MERGED_BYTES).toBe(2 * 1024 * 1024);
    const context = { note: 'n'.repeat(1000) };
    const integrations = { All: false, Amplitude: true };
    const shared =
      Buffer.byteLength(JSON.stringify(context)) + Buffer.byteLength(JSON.stringify(integrations));
    const bodyOf = (n: number) =>
      bufferOf({ context, integrations, batch: Array.from({ length: n }, (_, i) => track(i)) });
    // The largest count within the bound (a binary search), and one more.
    const fits = (count: number) => bodyOf(count).length + count * shared <= SEGMENT_MAX_MERGED_BYTES;
    let n = 1;
    let over = SEGMENT_MAX_MESSAGES;
    while (over - n > 1) {
      const middle = Math.floor((n + over) / 2);
      if (fits(middle)) n = middle;
      else over = middle;
    }
    const within = bodyOf(n);
    const request = parseSegmentBody(within, 'batch', receivedAt);
    // The bound is what validation and the outbox's split take as the events' weight.
    expect(request.bodyBytes).toBe(within.length + n * shared);
    expect(request.bodyBytes).toBeLessThanOrEqual(SEGMENT_MAX_MERGED_BYTES);
    expect(codeOf(() => parseSegmentBody(bodyOf(n + 1), 'batch', receivedAt))).toEqual({
      status: 413,
      code: 'payload_too_large',
      message: 'The batch is too large once its context is merged',
      details: [
        {
          message: `the batch's context and integrations (${shared} bytes) merged into its ${n + 1} messages come to more than ${SEGMENT_MAX_MERGED_BYTES} bytes`,
        },
      ],
    });
    // Exactly at the bound is taken, one byte more is not: 100 messages, the context's length
    // chosen to come within 101 bytes of it, and the rest made up in one message's userId.
    const exactly = (extra: number) => {
      const body = (length: number, pad: number) =>
        bufferOf({
          context: { note: 'x'.repeat(length) },
          batch: Array.from({ length: 100 }, (_, i) => ({
            ...track(i),
            userId: i === 0 ? 'u'.repeat(1 + pad) : 'u',
          })),
        });
      const weight = (length: number, pad: number) =>
        body(length, pad).length + 100 * Buffer.byteLength(JSON.stringify({ note: 'x'.repeat(length) }));
      const length = Math.floor((SEGMENT_MAX_MERGED_BYTES - weight(0, 0)) / 101);
      const pad = SEGMENT_MAX_MERGED_BYTES - weight(length, 0) + extra;
      expect(weight(length, pad)).toBe(SEGMENT_MAX_MERGED_BYTES + extra);
      return body(length, pad);
    };
    expect(parseSegmentBody(exactly(0), 'batch', receivedAt).bodyBytes).toBe(SEGMENT_MAX_MERGED_BYTES);
    expect(codeOf(() => parseSegmentBody(exactly(1), 'batch', receivedAt))?.code).toBe('payload_too_large');
    // Without shared fields the body's own size is the bound, however many messages.
    const plain = bufferOf({ batch: Array.from({ length: 2000 }, (_, i) => track(i)) });
    expect(parseSegmentBody(plain, 'batch', receivedAt).bodyBytes).toBe(plain.length);
    // A single message's context is its own: nothing is merged.
    const single = bufferOf({ userId: 'u', context: { note: 'x'.repeat(3_000_000 / 2) } });
    expect(parseSegmentBody(single, 'track', receivedAt).bodyBytes).toBe(single.length);
  });

  it('refuses a batch context nested too deep to merge, and derives no id for a message nested too deep', () => {
    let deep: unknown = 1;
    for (let i = 0; i <= maxEventDepth; i += 1) deep = [deep];
    expect(codeOf(() => parse({ context: { a: deep }, batch: [track(1)] }))).toEqual({
      status: 400,
      code: 'invalid_batch',
      message: `context.a${'[0]'.repeat(maxEventDepth)} is nested more than ${maxEventDepth} levels deep`,
      details: [
        {
          message: `context.a${'[0]'.repeat(maxEventDepth)} is nested more than ${maxEventDepth} levels deep`,
        },
      ],
    });
    expect(codeOf(() => parse({ integrations: { a: deep }, batch: [track(1)] }))?.code).toBe('invalid_batch');
    // One level less is merged.
    let fits: unknown = 1;
    for (let i = 0; i < maxEventDepth; i += 1) fits = [fits];
    expect(parse({ context: { a: fits }, batch: [track(1)] }).events).toEqual([
      { ...track(1), context: { a: fits }, timestamp: receivedAt.toISOString() },
    ]);
    // 100,000 levels: JSON.stringify would overflow the stack deriving an id; validation refuses it.
    const text = `{"userId":"u","properties":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
    const [message] = parse(text, 'track').events as Record<string, unknown>[];
    expect(message?.messageId).toBeUndefined();
    expect(message?.type).toBe('track');
    const shallow = { userId: 'u', properties: { a: [[['ten levels is fine']]] } };
    expect((parse(shallow, 'track').events[0] as Record<string, unknown>).messageId).toBe(
      derivedMessageId(shallow),
    );
  });
});

describe('segmentRouteOf', () => {
  it.each([
    ['/v1/batch', 'batch'],
    ['/v1/b', 'batch'],
    ['/v1/import', 'batch'],
    ['/v1/track', 'track'],
    ['/v1/t', 'track'],
    ['/v1/identify', 'identify'],
    ['/v1/i', 'identify'],
    ['/v1/page', 'page'],
    ['/v1/p', 'page'],
    ['/v1/screen', 'screen'],
    ['/v1/s', 'screen'],
    ['/v1/group', 'group'],
    ['/v1/g', 'group'],
    ['/v1/alias', 'alias'],
    ['/v1/a', 'alias'],
    ['/v1/track/', 'track'],
    ['/v1/track?x=1', 'track'],
  ])('POST %s is %s', (url, route) => {
    expect(segmentRouteOf('POST', url)).toBe(route);
  });

  it.each([
    ['GET', '/v1/track'],
    ['POST', '/v1/sdk.js'],
    ['POST', '/v1/projects/x/settings'],
    ['POST', '/v1/constructor'],
    // Only a trailing slash is dropped: '/t' is not 't'.
    ['POST', '/v1//t'],
    ['POST', '/v2/track'],
    ['POST', '/collect'],
    ['POST', undefined],
    [undefined, '/v1/track'],
  ])('%s %s is not a Segment route', (method, url) => {
    expect(segmentRouteOf(method, url)).toBeUndefined();
  });
});

describe('derivedMessageId', () => {
  // Worked out by hand from each message's SHA-256: version 8 in the third group, the variant
  // bits (10) in the fourth, so a retried message keeps its id across releases.
  it.each([
    [{ userId: 'u', event: 'E' }, '138f025c-9293-8f39-b8a3-6efeb3989fdf'],
    [{ anonymousId: 'a' }, '6537f474-0b7b-85f7-8213-4606e2dfcadf'],
    [{ userId: 'u3', event: 'E' }, 'e1831c86-3a45-896f-9622-6ff153f5b89a'],
    [{ userId: 'u4', event: 'E' }, '1ee85b16-2ff2-8f84-8ac8-2c7e3169cee8'],
  ])('derives %j as %s', (message, id) => {
    expect(derivedMessageId(message)).toBe(id);
  });
});
