/** Why a warehouse's breaker is open: the class of the error that opened it, and what it said. */
export interface BreakerCause {
  kind: 'unavailable' | 'misconfigured';
  /** SQLSTATE and message, secrets cut out. */
  detail: string;
}

export interface BreakerTimings {
  /** How long the breaker stays open after the first failure; doubled for each further one. */
  baseMs: number;
  maxMs: number;
  /** The wait a record is given while another one probes the warehouse. */
  probeWaitMs: number;
}

export const defaultBreakerTimings: BreakerTimings = { baseMs: 2000, maxMs: 60_000, probeWaitMs: 1000 };

export type BreakerState = 'closed' | 'open' | 'half-open';

/** Whether a write may go to the warehouse now: as usual, as the one probe, or not before `retryAfterMs`. */
export type Admission = { go: true; probe: boolean } | { go: false; retryAfterMs: number };

/**
 * One warehouse's circuit breaker. The first unavailable or misconfigured error opens it: its
 * records park without touching the warehouse for a cooldown that doubles with each failed
 * probe (to `maxMs`). After the cooldown one write goes as the probe while the others still
 * park; its success closes the breaker, its failure opens it again. Pure: the clock is given.
 */
export class WarehouseBreaker {
  private failures = 0;
  private openUntil = 0;
  private probing = false;
  private lastCause: BreakerCause | undefined;

  constructor(
    private readonly timings: BreakerTimings = defaultBreakerTimings,
    private readonly now: () => number = Date.now,
  ) {}

  get state(): BreakerState {
    if (this.failures === 0) return 'closed';
    return this.now() < this.openUntil ? 'open' : 'half-open';
  }

  /** What opened the breaker, while it is not closed. */
  get cause(): BreakerCause | undefined {
    return this.lastCause;
  }

  admit(): Admission {
    if (this.failures === 0) return { go: true, probe: false };
    const wait = this.openUntil - this.now();
    if (wait > 0) return { go: false, retryAfterMs: wait };
    if (this.probing) return { go: false, retryAfterMs: this.timings.probeWaitMs };
    this.probing = true;
    return { go: true, probe: true };
  }

  /** A write went through; true when that closed an open breaker (the warehouse is back). */
  succeeded(): boolean {
    const recovered = this.failures > 0;
    this.failures = 0;
    this.probing = false;
    this.lastCause = undefined;
    return recovered;
  }

  /** The probe ended without a verdict on the warehouse (this process had no connection for it). */
  abandonProbe(): void {
    this.probing = false;
  }

  /** A write met an unavailable or misconfigured warehouse; true when that opened a closed breaker. */
  failed(cause: BreakerCause): boolean {
    const opened = this.failures === 0;
    this.failures += 1;
    this.probing = false;
    this.lastCause = cause;
    this.openUntil = this.now() + this.cooldownMs();
    return opened;
  }

  /** How long a record that cannot go now should wait: until the breaker lets a probe through. */
  retryAfterMs(): number {
    return Math.max(this.openUntil - this.now(), this.probing ? this.timings.probeWaitMs : 0);
  }

  private cooldownMs(): number {
    return Math.min(this.timings.maxMs, this.timings.baseMs * 2 ** Math.min(30, this.failures - 1));
  }
}
