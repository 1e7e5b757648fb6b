import type { DataSource } from 'typeorm';
import {
  callVendor,
  failureOfStatus,
  isRequestFailure,
  retryDelayMs,
  signedWebhookHeaders,
  type RequestFailure,
  type RetryPolicy,
} from '@pipeline/destinations';
import type { Logger } from '@pipeline/logger';
import {
  defaultViolationLedgerOptions,
  readViolationBuckets,
  readViolationSamples,
  violationField,
  type RedisClient,
} from '@pipeline/redis';
import { returnedRows } from '../database/returned-rows';
import type { CredentialCipher } from '../apps/credential-cipher';
import { alertSecretContext } from './plan-alert.service';
import { resumeAfterExpiry, windowDue } from './alert-windows';
import { violationGenerated, windowAlerts, type AlertWindow } from './alert-messages';

const MINUTE_MS = 60_000;

export interface AlertSenderOptions {
  dataSource: DataSource;
  /** Where ingestion counts violations (no key prefix: the debugger's client). */
  redis: RedisClient;
  cipher: CredentialCipher;
  logger: Logger;
  /** The guarded fetch: every connection passes the egress policy again. */
  fetch: typeof fetch;
  intervalMs: number;
  /** Alerts handled at once; one slow webhook holds one of them. */
  concurrency: number;
  /** One POST's limit. */
  timeoutMs: number;
  now?: () => number;
  /** Counts may still arrive this long after a window ends. */
  graceMs?: number;
  /** POSTs of one window per claim (the first included), spaced by `retry`. */
  attemptsPerClaim?: number;
  retry?: RetryPolicy;
  /** Claims a window may fail before it is given up and the next one is tried. */
  maxFailures?: number;
  /** The wait after a failed claim, doubled per failure. */
  failureBackoff?: RetryPolicy;
}

export const defaultAlertSenderTimings = {
  graceMs: 30_000,
  attemptsPerClaim: 3,
  retry: { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 10_000 } satisfies RetryPolicy,
  maxFailures: 5,
  failureBackoff: { maxAttempts: 5, baseDelayMs: 30_000, maxDelayMs: 10 * MINUTE_MS } satisfies RetryPolicy,
};

interface ClaimedRow {
  plan_id: string;
  account_id: string;
  url: string;
  window_minutes: number;
  secret_ciphertext: string;
  secret_key_id: string;
  last_window_end: Date;
  failures: number;
  claim_token: string;
  plan_name: string | null;
}

type Outcome =
  { kind: 'sent'; alerts: number } | { kind: 'empty' } | { kind: 'failed'; failure: RequestFailure };

/**
 * Sends each enabled plan alert's due windows (docs/tracking-plans.md, "Alerts"). A row is
 * claimed by writing a lease and a token (FOR UPDATE SKIP LOCKED picks rows no other replica is
 * claiming), sent without a transaction open, and advanced only by the holder of its token:
 * one replica sends a window, and a crash between the POST and the advance sends it again
 * after the lease with the same message ids. Each claimed alert runs on its own, at most
 * `concurrency` at once: a hanging webhook holds its slot for its timeout, never another's.
 */
export class AlertSender {
  private timer: NodeJS.Timeout | undefined;
  private readonly running = new Set<Promise<void>>();
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => number;
  private readonly timings: typeof defaultAlertSenderTimings;

  constructor(private readonly options: AlertSenderOptions) {
    this.now = options.now ?? Date.now;
    this.timings = {
      graceMs: options.graceMs ?? defaultAlertSenderTimings.graceMs,
      attemptsPerClaim: options.attemptsPerClaim ?? defaultAlertSenderTimings.attemptsPerClaim,
      retry: options.retry ?? defaultAlertSenderTimings.retry,
      maxFailures: options.maxFailures ?? defaultAlertSenderTimings.maxFailures,
      failureBackoff: options.failureBackoff ?? defaultAlertSenderTimings.failureBackoff,
    };
  }

  /** How long a claim holds: past every POST and wait one claim may make, with room to spare. */
  private get leaseMs(): number {
    const { attemptsPerClaim, retry } = this.timings;
    return 2 * attemptsPerClaim * (this.options.timeoutMs + retry.maxDelayMs) + MINUTE_MS;
  }

  start(): void {
    if (this.timer) return;
    this.stopped = false;
    this.timer = setInterval(() => void this.tick(), this.options.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    await Promise.allSettled([...this.running]);
  }

  /** Claims what free slots allow and starts each; resolves once they are claimed, not sent. */
  tick(): Promise<void> {
    this.ticking ??= this.claimAndStart().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  /** Resolves when every alert started so far is done (tests). */
  async idle(): Promise<void> {
    await this.ticking;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async claimAndStart(): Promise<void> {
    const free = this.options.concurrency - this.running.size;
    if (free <= 0 || this.stopped) return;
    let rows: ClaimedRow[];
    try {
      rows = await this.claim(free);
    } catch (error) {
      this.options.logger.error('plan alerts: claim failed', { error });
      return;
    }
    for (const row of rows) {
      const run = this.handle(row)
        .catch((error: unknown) => this.unavailable(row, error))
        .finally(() => {
          this.running.delete(run);
          // A freed slot takes the next due alert now, not a tick later.
          if (!this.stopped) void this.tick();
        });
      this.running.add(run);
    }
  }

  private async claim(limit: number): Promise<ClaimedRow[]> {
    const now = new Date(this.now());
    return returnedRows<ClaimedRow>(
      await this.options.dataSource.query(
        `UPDATE tracking_plan_alerts a SET claimed_until = $2, claim_token = gen_random_uuid()
         FROM (
           SELECT plan_id FROM tracking_plan_alerts
           WHERE enabled
             AND last_window_end + make_interval(mins => window_minutes) + make_interval(secs => $3::double precision / 1000) <= $1
             AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
             AND (claimed_until IS NULL OR claimed_until <= $1)
           ORDER BY last_window_end
           LIMIT $4
           FOR UPDATE SKIP LOCKED
         ) due
         WHERE a.plan_id = due.plan_id
         RETURNING a.plan_id, a.account_id, a.url, a.window_minutes, a.secret_ciphertext, a.secret_key_id,
           a.last_window_end, a.failures, a.claim_token,
           (SELECT name FROM tracking_plans p WHERE p.id = a.plan_id) AS plan_name`,
        [now, new Date(now.getTime() + this.leaseMs), this.timings.graceMs, limit],
      ),
    );
  }

  /** The claimed alert's due windows, oldest first, while its claim is young enough. */
  private async handle(row: ClaimedRow): Promise<void> {
    const began = this.now();
    const size = row.window_minutes * MINUTE_MS;
    const keptMs = defaultViolationLedgerOptions.minuteTtlSeconds * 1000;
    let start = resumeAfterExpiry(row.last_window_end.getTime(), row.window_minutes, this.now(), keptMs);
    if (start !== row.last_window_end.getTime()) {
      this.options.logger.warn('plan alert: windows older than the kept counts skipped', {
        planId: row.plan_id,
        from: row.last_window_end.toISOString(),
        to: new Date(start).toISOString(),
      });
    }
    const secret = this.options.cipher.open(
      { ciphertext: row.secret_ciphertext, keyId: row.secret_key_id },
      alertSecretContext(row.plan_id),
    ).signingSecret as string;
    // Catching up after a pause: several windows per claim, within half its lease.
    while (!this.stopped && windowDue(start + size, this.now(), this.timings.graceMs)) {
      const window: AlertWindow = { planId: row.plan_id, planName: row.plan_name, start, end: start + size };
      const outcome = await this.sendWindow(row, window, secret);
      if (outcome.kind === 'failed') {
        await this.fail(row, window, outcome.failure);
        return;
      }
      const advanced = await this.complete(row, window, outcome);
      if (!advanced) return;
      start = window.end;
      if (this.now() - began > this.leaseMs / 2) break;
    }
    await this.release(row);
  }

  private async sendWindow(row: ClaimedRow, window: AlertWindow, secret: string): Promise<Outcome> {
    const { redis } = this.options;
    const buckets = await readViolationBuckets(redis, row.account_id, 'minute', window.start, window.end);
    const found = windowAlerts(buckets, row.plan_id);
    if (found.alerts.length === 0) return { kind: 'empty' };
    const samples = await readViolationSamples(
      redis,
      row.account_id,
      found.alerts.map((alert) => alert.sampleKey),
      1,
    );
    const batch = found.alerts.map((alert) =>
      violationGenerated(window, found, alert, samples.get(violationField(alert.sampleKey))?.[0]),
    );
    let failure: RequestFailure | undefined;
    for (let attempt = 1; attempt <= this.timings.attemptsPerClaim && !this.stopped; attempt++) {
      if (failure) {
        const wait = retryDelayMs(this.timings.retry, attempt - 1, failure.retryAfterMs ?? 0);
        // A Retry-After past what this claim may wait is waited between claims instead.
        if (wait > this.timings.retry.maxDelayMs) break;
        await new Promise((done) => setTimeout(done, wait));
      }
      failure = await this.post(row.url, secret, batch, window);
      if (!failure) return { kind: 'sent', alerts: batch.length };
      if (!failure.retryable) break;
    }
    return { kind: 'failed', failure: failure ?? { reason: 'aborted', retryable: true } };
  }

  /** One signed POST, as the webhook destination sends: `{batch, sentAt}`, redirects not followed. */
  private async post(
    url: string,
    secret: string,
    batch: unknown[],
    window: AlertWindow,
  ): Promise<RequestFailure | undefined> {
    const sent = new Date(this.now());
    const body = JSON.stringify({ batch, sentAt: sent.toISOString() });
    const answer = await callVendor(
      { fetch: this.options.fetch, timeoutMs: this.options.timeoutMs, redirect: 'manual' },
      {
        method: 'POST',
        url,
        // Signed at the real time, not the windows' clock: the receiver checks it against its own.
        headers: signedWebhookHeaders(secret, body, `${window.planId}:${window.start}:${window.end}`),
        body,
      },
    );
    if (isRequestFailure(answer)) return answer;
    if (answer.status >= 200 && answer.status < 300) return undefined;
    if (answer.status >= 300 && answer.status < 400)
      return {
        reason: `redirect_not_followed: http_${answer.status}`,
        retryable: false,
        status: answer.status,
      };
    return failureOfStatus(answer);
  }

  /** Advances past the window when the claim is still ours; false when it is not (a config change). */
  private async complete(row: ClaimedRow, window: AlertWindow, outcome: Outcome): Promise<boolean> {
    const sent = outcome.kind === 'sent';
    const updated = returnedRows<{ plan_id: string }>(
      await this.options.dataSource.query(
        `UPDATE tracking_plan_alerts SET
           last_window_end = $3, failures = 0, next_attempt_at = NULL,
           last_sent_window_end = CASE WHEN $4 THEN $3 ELSE last_sent_window_end END,
           last_error = CASE WHEN $4 THEN NULL ELSE last_error END,
           windows_sent = windows_sent + CASE WHEN $4 THEN 1 ELSE 0 END,
           alerts_sent = alerts_sent + $5
         WHERE plan_id = $1 AND claim_token = $2 RETURNING plan_id`,
        [row.plan_id, row.claim_token, new Date(window.end), sent, sent ? outcome.alerts : 0],
      ),
    );
    return updated.length === 1;
  }

  /**
   * A failed claim: the error is recorded and the window tried again after a backoff; after
   * `maxFailures` failed claims, or a refusal that will not pass (a 4xx, a refused address),
   * the window is given up and the next one is tried, so one bad window never stalls the rest.
   */
  private async fail(row: ClaimedRow, window: AlertWindow, failure: RequestFailure): Promise<void> {
    const failures = row.failures + 1;
    const giveUp = !failure.retryable || failures >= this.timings.maxFailures;
    const now = this.now();
    const retryAt = now + retryDelayMs(this.timings.failureBackoff, failures, failure.retryAfterMs ?? 0);
    this.options.logger.warn('plan alert not delivered', {
      planId: row.plan_id,
      windowEnd: new Date(window.end).toISOString(),
      reason: failure.reason,
      failures,
      givenUp: giveUp,
    });
    await this.options.dataSource.query(
      `UPDATE tracking_plan_alerts SET
         last_error = $3, last_error_at = $4,
         failures = CASE WHEN $5 THEN 0 ELSE $6 END,
         next_attempt_at = CASE WHEN $5 THEN NULL ELSE $7::timestamptz END,
         last_window_end = CASE WHEN $5 THEN $8 ELSE last_window_end END,
         windows_dropped = windows_dropped + CASE WHEN $5 THEN 1 ELSE 0 END,
         claimed_until = NULL, claim_token = NULL
       WHERE plan_id = $1 AND claim_token = $2`,
      [
        row.plan_id,
        row.claim_token,
        failure.reason.slice(0, 500),
        new Date(now),
        giveUp,
        failures,
        new Date(retryAt),
        new Date(window.end),
      ],
    );
  }

  /**
   * Our side failed (Redis, the database, a secret the keys cannot open): the window is not the
   * webhook's fault, so it is not counted towards giving it up; it is tried again after the
   * first backoff step, the error shown in the status.
   */
  private async unavailable(row: ClaimedRow, error: unknown): Promise<void> {
    this.options.logger.error('plan alert not sent: our side failed', { planId: row.plan_id, error });
    const now = this.now();
    try {
      await this.options.dataSource.query(
        `UPDATE tracking_plan_alerts SET
           last_error = 'unavailable: the violation counts or the alert could not be read', last_error_at = $3,
           next_attempt_at = $4, claimed_until = NULL, claim_token = NULL
         WHERE plan_id = $1 AND claim_token = $2`,
        [
          row.plan_id,
          row.claim_token,
          new Date(now),
          new Date(now + this.timings.failureBackoff.baseDelayMs),
        ],
      );
    } catch {
      // The database as well: the lease ends by itself and another claim tries again.
    }
  }

  private async release(row: ClaimedRow): Promise<void> {
    await this.options.dataSource.query(
      'UPDATE tracking_plan_alerts SET claimed_until = NULL, claim_token = NULL WHERE plan_id = $1 AND claim_token = $2',
      [row.plan_id, row.claim_token],
    );
  }
}
