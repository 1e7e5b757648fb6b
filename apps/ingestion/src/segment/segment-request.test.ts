import {
  derivedMessageId,
  parseSegmentBody,
  SEGMENT_MAX_BODY_BYTES,
  segmentRouteOf,
} from './segment-request';

const receivedAt = new Date('2026-03-01T10:00:05.000Z');
const parse = (body: unknown, route: Parameters<typeof parseSegmentBody>[1] = 'batch') =>
  parseSegmentBody(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), route, receivedAt);

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
    ['POST', '/v2/track'],
    ['POST', '/collect'],
    ['POST', undefined],
    [undefined, '/v1/track'],
  ])('%s %s is not a Segment route', (method, url) => {
    expect(segmentRouteOf(method, url)).toBeUndefined();
  });
});
