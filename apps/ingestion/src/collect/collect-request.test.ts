import { isAppError } from '@pipeline/errors';
import { findWriteKey, parseCollectBody } from './collect-request';

// What a /collect body and its headers mean before any event is validated: refusals at the
// door, and where the write key is taken from.

function refusal(parse: () => unknown): { status: number; code: string; message: string; details: unknown } {
  try {
    parse();
  } catch (error) {
    if (!isAppError(error)) throw error;
    return { status: error.status, code: error.code, message: error.message, details: error.details };
  }
  throw new Error('not refused');
}

const body = (value: unknown) => Buffer.from(JSON.stringify(value));
const event = { type: 'track', event: 'Clicked', messageId: 'm1', anonymousId: 'a1' };
const SENT_AT_PROBLEM =
  'sentAt must be an ISO 8601 date-time with a time zone, on a date that exists, in the years 0001-9999';

describe('parseCollectBody: what is not a request', () => {
  it.each([
    ['no body', undefined, 'body is missing'],
    ['an empty body', Buffer.alloc(0), 'body is missing'],
    ['a body that is not JSON', Buffer.from('{"type":'), 'body is not valid JSON'],
    ['null', Buffer.from('null'), 'body must be a JSON object'],
    ['an array', Buffer.from('[{"type":"track"}]'), 'body must be a JSON object'],
    ['a string', Buffer.from('"track"'), 'body must be a JSON object'],
    ['a number', Buffer.from('42'), 'body must be a JSON object'],
  ])('refuses %s as invalid_payload', (_name, raw, message) => {
    expect(refusal(() => parseCollectBody(raw))).toEqual({
      status: 400,
      code: 'invalid_payload',
      message,
      details: { details: [{ message }] },
    });
  });
});

describe('parseCollectBody: a single event', () => {
  it('is the whole body, with its size, and its writeKey as the body key', () => {
    const raw = body({ ...event, writeKey: 'wk_1' });
    expect(parseCollectBody(raw)).toStrictEqual({
      events: [{ ...event, writeKey: 'wk_1' }],
      bodyBytes: raw.length,
      bodyWriteKey: 'wk_1',
    });
  });

  it('has no body key when its writeKey is absent, empty or not a string', () => {
    for (const writeKey of [undefined, '', 7, null]) {
      const raw = body({ ...event, writeKey });
      const parsed = parseCollectBody(raw);
      expect(parsed).toStrictEqual({ events: [JSON.parse(raw.toString())], bodyBytes: raw.length });
    }
  });
});

describe('parseCollectBody: a batch', () => {
  it('is its events, with the body’s size, key and sentAt', () => {
    const raw = body({
      writeKey: 'wk_1',
      sentAt: '2026-03-01T12:00:00Z',
      batch: [event, { ...event, messageId: 'm2' }],
    });
    expect(parseCollectBody(raw)).toStrictEqual({
      events: [event, { ...event, messageId: 'm2' }],
      bodyBytes: raw.length,
      bodyWriteKey: 'wk_1',
      batchSentAt: '2026-03-01T12:00:00Z',
    });
  });

  it('leaves out an empty writeKey and an absent sentAt', () => {
    const raw = body({ writeKey: '', batch: [event] });
    expect(parseCollectBody(raw)).toStrictEqual({ events: [event], bodyBytes: raw.length });
  });

  it('takes a batch of exactly 100 events and refuses 101 as batch_too_large', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => ({ ...event, messageId: `m${i}` }));
    expect(parseCollectBody(body({ batch: hundred })).events.length).toBe(100);
    expect(refusal(() => parseCollectBody(body({ batch: [...hundred, event] })))).toEqual({
      status: 413,
      code: 'batch_too_large',
      message: 'A batch holds at most 100 events',
      details: { details: [{ message: 'received 101 events; at most 100 are accepted' }] },
    });
  });

  it.each([
    ['a batch that is not an array', { batch: { 0: event } }, ['batch must be an array of events']],
    ['a null batch', { batch: null }, ['batch must be an array of events']],
    ['an empty batch', { batch: [] }, ['batch must hold at least one event']],
    ['a writeKey that is not a string', { writeKey: 5, batch: [event] }, ['writeKey must be a string']],
    ['a null writeKey', { writeKey: null, batch: [event] }, ['writeKey must be a string']],
    ['a sentAt without a time zone', { sentAt: '2026-03-01T12:00:00', batch: [event] }, [SENT_AT_PROBLEM]],
    ['a null sentAt', { sentAt: null, batch: [event] }, [SENT_AT_PROBLEM]],
    [
      'every problem at once',
      { writeKey: [], sentAt: 'yesterday', batch: 'events' },
      ['batch must be an array of events', 'writeKey must be a string', SENT_AT_PROBLEM],
    ],
  ])('refuses %s as invalid_batch, listing each problem', (_name, value, problems) => {
    expect(refusal(() => parseCollectBody(body(value)))).toEqual({
      status: 400,
      code: 'invalid_batch',
      message: problems.join('; '),
      details: { details: problems.map((message) => ({ message })) },
    });
  });
});

describe('findWriteKey', () => {
  const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;

  it('takes X-Write-Key first, trimmed, the first of repeated headers', () => {
    expect(findWriteKey({ 'x-write-key': ' wk_h ', authorization: 'Bearer wk_b' }, 'wk_body')).toBe('wk_h');
    expect(findWriteKey({ 'x-write-key': ['wk_1', 'wk_2'] }, undefined)).toBe('wk_1');
  });

  it('goes on to Authorization when X-Write-Key is blank', () => {
    expect(findWriteKey({ 'x-write-key': '  ', authorization: 'Bearer wk_b' }, undefined)).toBe('wk_b');
    expect(findWriteKey({ 'x-write-key': [], authorization: 'Bearer wk_b' }, undefined)).toBe('wk_b');
  });

  it('takes a Bearer token, in any case, with any spacing around it', () => {
    expect(findWriteKey({ authorization: 'Bearer wk_b' }, 'wk_body')).toBe('wk_b');
    expect(findWriteKey({ authorization: 'bearer wk_b' }, undefined)).toBe('wk_b');
    expect(findWriteKey({ authorization: 'BEARER \t wk_b  ' }, undefined)).toBe('wk_b');
  });

  it('takes no Bearer token from a malformed header', () => {
    expect(findWriteKey({ authorization: 'Bearer wk_b extra' }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: 'Bearer ' }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: 'Bearerwk_b' }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: 'xBearer wk_b' }, 'wk_body')).toBe('wk_body');
  });

  it('takes the user name of Basic credentials, as Segment’s libraries send the key', () => {
    expect(findWriteKey({ authorization: basic('wk_s:') }, 'wk_body')).toBe('wk_s');
    expect(findWriteKey({ authorization: basic('wk_s') }, undefined)).toBe('wk_s');
    expect(findWriteKey({ authorization: basic(' wk_s :secret') }, undefined)).toBe('wk_s');
    expect(
      findWriteKey({ authorization: `basic  ${Buffer.from('wk_s:').toString('base64')} ` }, undefined),
    ).toBe('wk_s');
  });

  it('reads Basic credentials in standard and URL-safe base64', () => {
    // 'wk>>>?:' is d2s+Pj4/Og== in standard base64, d2s-Pj4_Og in URL-safe.
    expect(findWriteKey({ authorization: 'Basic d2s+Pj4/Og==' }, undefined)).toBe('wk>>>?');
    expect(findWriteKey({ authorization: 'Basic d2s-Pj4_Og' }, undefined)).toBe('wk>>>?');
    expect(findWriteKey({ authorization: 'Basic YT9iPmM6' }, undefined)).toBe('a?b>c');
  });

  it('takes no key from Basic credentials without a user name, or malformed', () => {
    expect(findWriteKey({ authorization: basic(':secret') }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: basic('  :secret') }, undefined)).toBeUndefined();
    expect(findWriteKey({ authorization: 'Basic d2tfczo= extra' }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: 'Basic d2t*czo=' }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: 'xBasic d2tfczo=' }, 'wk_body')).toBe('wk_body');
    expect(findWriteKey({ authorization: 'Basicd2tfczo=' }, 'wk_body')).toBe('wk_body');
  });

  it('falls back to the body’s key, trimmed, and to none', () => {
    expect(findWriteKey({}, ' wk_body ')).toBe('wk_body');
    expect(findWriteKey({}, '   ')).toBeUndefined();
    expect(findWriteKey({}, '')).toBeUndefined();
    expect(findWriteKey({}, undefined)).toBeUndefined();
    expect(findWriteKey({ authorization: 'Digest x' }, undefined)).toBeUndefined();
  });
});
