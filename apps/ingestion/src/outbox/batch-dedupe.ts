import type { Logger } from '@pipeline/logger';
import type { RedisClient } from '@pipeline/redis';
import { SharedStoreBatch } from '../limits/shared-store-batch';
import { batchDedupeKey, DEDUPE_WINDOW_SECONDS } from './batch-dedupe-key';

/**
 * Remembers committed batches for 24 hours in the shared store, so a retried batch is
 * acknowledged again without a second publish. Without the store (or while it is down) every
 * batch is published: duplicates are possible then, never losses, and consumers are
 * idempotent on messageId.
 */
export class BatchDedupe {
  private lastWarning = 0;
  private readonly store: SharedStoreBatch | null;

  constructor(
    private readonly redis: RedisClient | null,
    private readonly logger: Logger,
  ) {
    this.store = redis ? SharedStoreBatch.for(redis) : null;
  }

  /** The batch's key in the store: SharedRateLimiter.take looks it up with the rate limits. */
  keyOf(writeKeyId: string, batchId: string): string {
    return batchDedupeKey(writeKeyId, batchId);
  }

  async seen(writeKeyId: string, batchId: string): Promise<boolean> {
    if (!this.redis) return false;
    try {
      return (await this.redis.exists(this.keyOf(writeKeyId, batchId))) === 1;
    } catch (error) {
      this.warn(error);
      return false;
    }
  }

  async remember(writeKeyId: string, batchId: string): Promise<void> {
    if (!this.store) return;
    try {
      // Rides with the next take's script call, or leaves alone after MARK_WAIT_MS
      // (SharedStoreBatch).
      await this.store.mark(this.keyOf(writeKeyId, batchId), DEDUPE_WINDOW_SECONDS);
    } catch (error) {
      this.warn(error);
    }
  }

  private warn(error: unknown): void {
    if (Date.now() - this.lastWarning < 10_000) return;
    this.lastWarning = Date.now();
    this.logger.warn('batch dedupe store unavailable; publishing without dedupe', {
      error: (error as Error).message,
    });
  }
}
