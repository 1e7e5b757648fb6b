import type { Logger } from '@pipeline/logger';
import { closeRedis, createSubscriber, type Redis } from '@pipeline/redis';

/**
 * What the control plane broadcasts when a cached tenant must not be used any longer: a
 * revoked write key (ingestion stops accepting it), or an account whose tenant records changed
 * (rotated credentials, an integration created, edited or deleted, a write key's origins or
 * limits): every cache looks the account's keys up again.
 */
export type TenantChange =
  | { kind: 'write_key_revoked'; accountId: string; writeKeyId: string }
  | { kind: 'tenant_changed'; accountId: string };

/** What a cache does with a change; `resync` follows a gap in which changes may have been missed. */
export type TenantChangeEvent = TenantChange | { kind: 'resync' };

/** Pub/sub channels are not key-prefixed: every instance of every service hears this one. */
export const TENANT_CHANGES_CHANNEL = 'pipeline:tenant-changes:v1';

/**
 * Without a live subscription a cache cannot hear of revocations, so it keeps entries at most
 * this long: the documented bound (docs/tracking-api.md, "Revoked write keys") holds with or without Redis.
 */
export const UNSUBSCRIBED_MAX_TTL_MS = 10_000;

/**
 * Whether a cached tenant may still be used at `now`: before its TTL and, while no change would
 * be heard, for at most UNSUBSCRIBED_MAX_TTL_MS after it was stored.
 */
export function usableCacheEntry(
  entry: { storedAt: number; expiresAt: number },
  now: number,
  hearsChanges: boolean,
): boolean {
  if (entry.expiresAt <= now) return false;
  return hearsChanges || now - entry.storedAt < UNSUBSCRIBED_MAX_TTL_MS;
}

export class TenantChangePublisher {
  constructor(
    private readonly redis: Pick<Redis, 'publish'> | null,
    private readonly logger: Logger,
  ) {}

  /** Best effort: a failure is logged, and caches still expire within their TTL. */
  async publish(change: TenantChange): Promise<void> {
    if (!this.redis) return;
    try {
      await this.redis.publish(TENANT_CHANGES_CHANNEL, JSON.stringify(change));
    } catch (error) {
      this.logger.warn('tenant change not broadcast; caches expire within their TTL', {
        change: change.kind,
        accountId: change.accountId,
        error: (error as Error).message,
      });
    }
  }
}

function parse(message: string): TenantChange | null {
  try {
    const value = JSON.parse(message) as Partial<TenantChange>;
    if (
      value.kind === 'write_key_revoked' &&
      typeof value.writeKeyId === 'string' &&
      typeof value.accountId === 'string'
    )
      return value as TenantChange;
    if (value.kind === 'tenant_changed' && typeof value.accountId === 'string') return value as TenantChange;
  } catch {
    // Not ours to act on.
  }
  return null;
}

/**
 * Hears the control plane's tenant changes on a dedicated connection. `live` is true while
 * subscribed; after any disconnection the listener gets `resync` once subscribed again, since
 * changes broadcast meanwhile were lost.
 */
export class TenantChangeSubscriber {
  private subscribed = false;
  private everSubscribed = false;

  private constructor(
    private readonly redis: Redis,
    private readonly listener: (event: TenantChangeEvent) => void,
    private readonly logger: Logger,
  ) {}

  static start(
    redisUrl: string,
    listener: (event: TenantChangeEvent) => void,
    logger: Logger,
  ): TenantChangeSubscriber {
    const subscriber = new TenantChangeSubscriber(
      createSubscriber({ REDIS_URL: redisUrl }, { logger }),
      listener,
      logger,
    );
    subscriber.listen();
    return subscriber;
  }

  get live(): boolean {
    return this.subscribed;
  }

  private listen(): void {
    const { redis } = this;
    redis.on('message', (channel: string, message: string) => {
      if (channel !== TENANT_CHANGES_CHANNEL) return;
      const change = parse(message);
      if (change) this.listener(change);
    });
    redis.on('close', () => {
      this.subscribed = false;
    });
    // ioredis subscribes again on its own after a reconnect; `ready` follows that.
    redis.on('ready', () => {
      if (!this.everSubscribed) return;
      this.subscribed = true;
      this.listener({ kind: 'resync' });
      this.logger.info('tenant changes: subscribed again; caches cleared');
    });
    void redis
      .connect()
      .then(() => redis.subscribe(TENANT_CHANGES_CHANNEL))
      .then(() => {
        this.everSubscribed = true;
        this.subscribed = true;
      })
      .catch((error: Error) => {
        // Not fatal: until Redis answers, caches keep entries at most UNSUBSCRIBED_MAX_TTL_MS.
        this.logger.warn('tenant changes: not subscribed yet', { error: error.message });
        redis.once('ready', () => {
          void redis.subscribe(TENANT_CHANGES_CHANNEL).then(() => {
            this.everSubscribed = true;
            this.subscribed = true;
            this.listener({ kind: 'resync' });
          });
        });
      });
  }

  async stop(): Promise<void> {
    this.subscribed = false;
    await closeRedis(this.redis);
  }
}
