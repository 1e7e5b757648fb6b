import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { TrackingEvent } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneUnavailable, RegulatedSubjects, subjectHash } from '@pipeline/tenancy';
import { RegulationDoor, UNREADABLE_LOG_INTERVAL_MS } from './regulation-door';

const key = randomBytes(32);
const receivedAt = new Date('2026-11-29T12:00:00Z');
const subjects = new RegulatedSubjects({
  hashKey: key.toString('base64'),
  subjects: [
    { hash: subjectHash(key, 'USER_ID', 'x'), suppressed: true, deleteCutoff: null },
    {
      hash: subjectHash(key, 'ANONYMOUS_ID', 'anon-d'),
      suppressed: false,
      deleteCutoff: receivedAt.toISOString(),
    },
  ],
});
const none = new RegulatedSubjects({ hashKey: key.toString('base64'), subjects: [] });
const events = (...ids: { userId?: string; anonymousId?: string }[]) =>
  ids.map((id, n) => ({ type: 'track', event: 'E', messageId: `m${n}`, ...id }) as TrackingEvent);

function door(answer: () => Promise<RegulatedSubjects>, cached?: RegulatedSubjects, maxLogged?: number) {
  const logs: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  let now = receivedAt.getTime();
  let asked = 0;
  const regulationDoor = new RegulationDoor(
    {
      peek: () => cached,
      forAccount: () => {
        asked += 1;
        return answer();
      },
    },
    createLogger({ service: 'door-test', stream }),
    () => now,
    maxLogged,
  );
  return {
    door: regulationDoor,
    logs,
    asked: () => asked,
    advance: (ms: number) => (now += ms),
  };
}

describe('RegulationDoor', () => {
  it('names the suppressed and deleted events by index, from the cache without asking', async () => {
    const d = door(() => Promise.reject(new Error('not asked')), subjects);
    const batch = events(
      { userId: 'x' },
      { userId: 'y' },
      { anonymousId: 'anon-d' },
      { userId: 'x', anonymousId: 'a' },
    );
    expect(await d.door.regulated('acc-1', batch, receivedAt)).toEqual([0, 2, 3]);
    // After the deletion's cut-off, the deleted subject's new events come in.
    expect(await d.door.regulated('acc-1', batch, new Date(receivedAt.getTime() + 1))).toEqual([0, 3]);
    expect(d.asked()).toBe(0);
  });

  it('asks when nothing is cached, and an account without subjects names nothing', async () => {
    const d = door(() => Promise.resolve(none));
    expect(await d.door.regulated('acc-1', events({ userId: 'x' }), receivedAt)).toEqual([]);
    expect(d.asked()).toBe(1);
  });

  it('lets everything in when the subjects cannot be read, saying so once a minute per account', async () => {
    const d = door(() => Promise.reject(new ControlPlaneUnavailable('control plane answered 503')));
    const batch = events({ userId: 'x' });
    expect(await d.door.regulated('acc-1', batch, receivedAt)).toEqual([]);
    expect(await d.door.regulated('acc-1', batch, receivedAt)).toEqual([]);
    expect(await d.door.regulated('acc-2', batch, receivedAt)).toEqual([]);
    d.advance(UNREADABLE_LOG_INTERVAL_MS - 1);
    await d.door.regulated('acc-1', batch, receivedAt);
    expect(d.logs).toHaveLength(2);
    d.advance(1);
    await d.door.regulated('acc-1', batch, receivedAt);
    expect(d.logs).toHaveLength(3);
    const lines = d.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => [line.accountId, line.error])).toEqual([
      ['acc-1', 'control plane answered 503'],
      ['acc-2', 'control plane answered 503'],
      ['acc-1', 'control plane answered 503'],
    ]);
    expect(d.asked()).toBe(5);
    expect(UNREADABLE_LOG_INTERVAL_MS).toBe(60_000);
  });

  it('forgets the accounts it logged beyond its bound, so one of them may log again early', async () => {
    const d = door(() => Promise.reject(new ControlPlaneUnavailable('down')), undefined, 2);
    const batch = events({ userId: 'x' });
    for (const account of ['acc-1', 'acc-2', 'acc-1', 'acc-3', 'acc-1', 'acc-2'])
      await d.door.regulated(account, batch, receivedAt);
    const accounts = d.logs.map((line) => (JSON.parse(line) as { accountId: string }).accountId);
    // acc-3 found the bound full: the two before it were forgotten, and both logged again.
    expect(accounts).toEqual(['acc-1', 'acc-2', 'acc-3', 'acc-1', 'acc-2']);
  });

  it('throws anything else', async () => {
    const d = door(() => Promise.reject(new TypeError('bug')));
    await expect(d.door.regulated('acc-1', events({ userId: 'x' }), receivedAt)).rejects.toBeInstanceOf(
      TypeError,
    );
  });
});
