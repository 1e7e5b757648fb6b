import { deliveryHeaders } from './destination';
import { replayDeadLetters, replaySends, REPLAY_SEND_BYTES, type ReplayableLetter } from './dead-letters';

// A replay's sends stay under a broker's default `message.max.bytes` (1 MB): several 512 KB
// letters in one send would be refused as one too-large record batch, so such a replay could
// never succeed.

const letter = (offset: number, bytes: number): ReplayableLetter => ({
  partition: 0,
  offset: String(offset),
  key: 'anon-1',
  value: Buffer.alloc(bytes, 0x61),
  target: 'hook',
  reason: 'http_400',
  origin: `outbox/0/${offset}`,
});

const offsetsOf = (sends: Map<string, ReplayableLetter[]>[]) =>
  sends.map((send) => [...send].map(([kind, letters]) => [kind, letters.map((l) => l.offset)]));

describe('replaySends', () => {
  it('puts each 500 KB letter in a send of its own, and small ones together, in order', () => {
    const big = [1, 2, 3].map((n) => letter(n, 500 * 1024));
    expect(offsetsOf(replaySends(new Map([['webhook', big]])))).toEqual([
      [['webhook', ['1']]],
      [['webhook', ['2']]],
      [['webhook', ['3']]],
    ]);
    const small = [1, 2, 3].map((n) => letter(n, 1000));
    expect(offsetsOf(replaySends(new Map([['webhook', small]])))).toEqual([[['webhook', ['1', '2', '3']]]]);
  });

  it('cuts at the byte bound across kinds, and sends a letter over the bound alone', () => {
    const sends = replaySends(
      new Map([
        ['amplitude', [letter(1, 400), letter(2, 400)]],
        ['webhook', [letter(3, 5000), letter(4, 400)]],
      ]),
      1500,
    );
    expect(offsetsOf(sends)).toEqual([
      [['amplitude', ['1', '2']]],
      [['webhook', ['3']]],
      [['webhook', ['4']]],
    ]);
  });

  it('counts a letter by its value, key, reason, target and origin in UTF-8 bytes, plus 256', () => {
    // 10 + 3 + 11 + 5 + 11 + 256: every text with an é, two bytes in UTF-8.
    const full: ReplayableLetter = {
      partition: 0,
      offset: '1',
      key: 'ké',
      value: Buffer.alloc(10, 0x61),
      target: 'hoök',
      reason: 'http_400 é',
      origin: 'outbox/0/é',
    };
    // A tombstone without headers: the 256 bytes of its record alone.
    const bare: ReplayableLetter = {
      partition: 0,
      offset: '2',
      key: null,
      value: null,
      target: undefined,
      reason: undefined,
      origin: undefined,
    };
    const sendsOf = (letters: ReplayableLetter[], maxBytes: number) =>
      offsetsOf(replaySends(new Map([['webhook', letters]]), maxBytes));
    expect(sendsOf([full, bare], 296 + 256)).toEqual([[['webhook', ['1', '2']]]]);
    expect(sendsOf([full, bare], 296 + 256 - 1)).toEqual([[['webhook', ['1']]], [['webhook', ['2']]]]);
    expect(sendsOf([bare, bare], 512)).toEqual([[['webhook', ['2', '2']]]]);
    expect(sendsOf([bare, bare], 511)).toEqual([[['webhook', ['2']]], [['webhook', ['2']]]]);
  });

  it('sends a first letter over the bound alone, with no empty send before it', () => {
    expect(offsetsOf(replaySends(new Map([['webhook', [letter(1, 5000), letter(2, 10)]]]), 1500))).toEqual([
      [['webhook', ['1']]],
      [['webhook', ['2']]],
    ]);
  });

  it('answers no send for no letters', () => {
    expect(replaySends(new Map([['webhook', []]]))).toEqual([]);
  });
});

describe('replayDeadLetters', () => {
  it('sends a page of 512 KB letters in sends of at most REPLAY_SEND_BYTES, acks -1, each letter once', async () => {
    const batches: { topic: string; offsets: string[]; bytes: number; acks: number }[] = [];
    const producer = {
      sendBatch: async (batch: {
        topicMessages: { topic: string; messages: { value: Buffer | string | null; headers?: object }[] }[];
        acks: number;
      }) => {
        for (const { topic, messages } of batch.topicMessages)
          batches.push({
            topic,
            acks: batch.acks,
            offsets: messages.map((m) =>
              String((m.headers as Record<string, string>)[deliveryHeaders.origin]),
            ),
            bytes: messages.reduce((sum, m) => sum + (m.value?.length ?? 0), 0),
          });
      },
    };
    const letters = [1, 2, 3, 4].map((n) => letter(n, 512 * 1024));
    expect(await replayDeadLetters(producer, new Map([['webhook', letters]]), 'p.')).toBe(4);
    expect(batches.map((b) => [b.topic, b.acks, b.offsets])).toEqual(
      [1, 2, 3, 4].map((n) => ['p.delivery.webhook.retry.v1', -1, [`outbox/0/${n}`]]),
    );
    expect(Math.max(...batches.map((b) => b.bytes))).toBeLessThanOrEqual(REPLAY_SEND_BYTES);
  });
});
