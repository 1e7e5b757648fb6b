import type { Clock, Transport } from '../delivery';
import type { Log } from '../log';
import type { Answer } from '../retry-policy';

// Stand-ins for the browser in unit tests: a clock whose timers run when the test advances
// time, a transport that records requests and answers from a script, and a recording log.

export class FakeClock implements Clock {
  time = Date.parse('2026-03-01T12:00:00.000Z');
  randomValue = 0.5;
  private timers: { due: number; run: () => void }[] = [];

  now = (): number => this.time;
  random = (): number => this.randomValue;

  later = (run: () => void, ms: number): (() => void) => {
    const timer = { due: this.time + ms, run };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  };

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, running each timer at its due time and letting promises settle. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => t.due <= end).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.time = Math.max(this.time, next.due);
      next.run();
      await settle();
    }
    this.time = end;
  }
}

/** Lets pending promise callbacks (a fake request's answer) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i += 1) await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface Posted {
  url: string;
  body: { writeKey: string; sentAt: string; batch: Record<string, unknown>[] };
  writeKey: string;
  keepalive: boolean;
  at: number;
}

export class FakeTransport implements Transport {
  posts: Posted[] = [];
  beacons: { url: string; body: Posted['body']; bytes: number }[] = [];
  /** Answers for the next posts, in order; `null` is a network failure. Then 200. */
  answers: (Answer | null)[] = [];
  beaconAccepts = true;

  constructor(private readonly clock: FakeClock) {}

  post = (url: string, body: string, writeKey: string, keepalive: boolean): Promise<Answer | null> => {
    this.posts.push({
      url,
      body: JSON.parse(body) as Posted['body'],
      writeKey,
      keepalive,
      at: this.clock.now(),
    });
    const answer = this.answers.length ? this.answers.shift() : ok;
    return Promise.resolve(answer ?? null);
  };

  beacon = (url: string, body: string): boolean => {
    if (!this.beaconAccepts) return false;
    this.beacons.push({ url, body: JSON.parse(body) as Posted['body'], bytes: Buffer.byteLength(body) });
    return true;
  };

  /** messageIds of each post's batch. */
  postedIds(): string[][] {
    return this.posts.map((p) => p.body.batch.map((e) => String(e.messageId)));
  }
}

const ok: Answer = { status: 202, body: { ok: true }, retryAfter: null };

export class RecordingLog implements Log {
  errors: string[] = [];
  warnings: string[] = [];
  error = (message: string): void => {
    this.errors.push(message);
  };
  warn = (message: string): void => {
    this.warnings.push(message);
  };
}
