import type { Logger } from '@pipeline/logger';
import { closeRedis, createSubscriber, type RedisClient, type RedisConnection } from '@pipeline/redis';
import {
  parseTenantChange,
  TENANT_CHANGES_CHANNEL,
  type TenantChange,
  type TenantChangeEvent,
} from './tenant-change-message';

export class TenantChangePublisher {
  constructor(
    private readonly redis: Pick<RedisClient, 'publish'> | null,
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

/**
 * Hears the control plane's tenant changes on a dedicated connection. `live` is true while
 * subscribed; after any disconnection the listener gets `resync` once subscribed again, since
 * changes broadcast meanwhile were lost.
 */
export class TenantChangeSubscriber {
  private subscribed = false;
  private everSubscribed = false;

  private constructor(
    private readonly redis: RedisClient,
    private readonly listener: (event: TenantChangeEvent) => void,
    private readonly logger: Logger,
  ) {}

  static start(
    connection: RedisConnection,
    listener: (event: TenantChangeEvent) => void,
    logger: Logger,
  ): TenantChangeSubscriber {
    const subscriber = new TenantChangeSubscriber(createSubscriber(connection, { logger }), listener, logger);
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
      const change = parseTenantChange(message);
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
