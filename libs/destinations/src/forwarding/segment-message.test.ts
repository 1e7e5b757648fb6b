import { createHash } from 'node:crypto';
import type { TrackingEvent } from '@pipeline/events';
import { segmentMessageOf } from './segment-message';
import { correctedSampleTime, outboundOf, sampleReceipt, sampleTimestamp } from './testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const received = sampleReceipt.receivedAt.toISOString();

describe('Segment message mapping', () => {
  it('keeps the event, corrects its time, puts the server’s view in context, and drops our own fields', () => {
    const event: TrackingEvent = {
      ...base,
      type: 'track',
      event: 'E',
      properties: { a: 1 },
      writeKey: 'wk-secret',
      sentAt: '2026-03-01T12:00:01.000Z',
      sessionId: 's-1',
      integrations: { All: false, Segment: true },
      context: { session: { id: 'old', n: 2 }, os: 'Linux', userAgent: 'Client/1', ip: '10.0.0.1' },
    } as TrackingEvent;
    expect(segmentMessageOf(outboundOf(event))).toStrictEqual({
      type: 'track',
      event: 'E',
      properties: { a: 1 },
      anonymousId: 'anon-1',
      integrations: { All: false, Segment: true },
      messageId: 'm-1',
      userId: 'u-1',
      timestamp: '2026-03-01T11:59:58.000Z',
      originalTimestamp: sampleTimestamp,
      receivedAt: received,
      context: {
        os: 'Linux',
        userAgent: sampleReceipt.userAgent,
        ip: '198.51.100.7',
        session: { id: 's-1', n: 2 },
      },
    });
  });

  it('takes the client’s user agent when the server saw none, and leaves out what is absent', () => {
    const event: TrackingEvent = {
      ...base,
      userId: '',
      type: 'identify',
      traits: { plan: 'pro' },
      context: { session: { id: 'c-1' }, userAgent: 'Client/1' },
    };
    expect(segmentMessageOf(outboundOf(event, { ip: null, userAgent: null }))).toStrictEqual({
      type: 'identify',
      traits: { plan: 'pro' },
      anonymousId: 'anon-1',
      messageId: 'm-1',
      timestamp: correctedSampleTime.toISOString(),
      originalTimestamp: sampleTimestamp,
      receivedAt: received,
      context: { session: { id: 'c-1' }, userAgent: 'Client/1' },
    });
    expect(
      segmentMessageOf(outboundOf({ ...base, type: 'page' }, { ip: null, userAgent: null })),
    ).toStrictEqual({
      type: 'page',
      anonymousId: 'anon-1',
      messageId: 'm-1',
      userId: 'u-1',
      timestamp: correctedSampleTime.toISOString(),
      originalTimestamp: sampleTimestamp,
      receivedAt: received,
      context: {},
    });
  });

  it('gives the session id a session of its own when the context has none', () => {
    const message = segmentMessageOf(outboundOf({ ...base, type: 'page', sessionId: 's-2' }, { ip: null }));
    expect(message.context).toStrictEqual({ userAgent: sampleReceipt.userAgent, session: { id: 's-2' } });
  });

  it('hashes a messageId of 100 characters or more, as Segment wants them shorter', () => {
    const id = (messageId: string) =>
      segmentMessageOf(outboundOf({ ...base, messageId, type: 'page' })).messageId;
    expect(id('x'.repeat(99))).toBe('x'.repeat(99));
    expect(id('x'.repeat(100))).toBe(createHash('sha256').update('x'.repeat(100)).digest('hex'));
  });
});
