import type { Admin, Kafka } from 'kafkajs';
import { consumerGroupLag } from '@pipeline/kafka';

export interface HealthReport {
  status: number;
  body: Record<string, unknown>;
}

export interface HealthReporter {
  report(): Promise<HealthReport>;
}

/** One delivery kind in the full report (metrics port): its consumer group, lag and verdict. */
export interface DeliveryKindHealth {
  groupId: string;
  lag: number;
  healthy: boolean;
}

/**
 * What the public /health shows: the statuses (`ok`, `durableIngest`, `deliveryHealthy`) and,
 * in hosted mode, `delivery` with one `{ healthy }` per delivery kind, as the spec's answer has
 * it; never the consumer groups or their lag, which tell anyone on the internet how the
 * pipeline is built and how far behind it is. The whole report is on the metrics port
 * (metricsHttp).
 */
export function publicHealth(report: HealthReport): HealthReport {
  const { ok, durableIngest, deliveryHealthy } = report.body;
  const kinds = report.body.delivery as Record<string, DeliveryKindHealth> | undefined;
  return {
    status: report.status,
    body: {
      ok,
      durableIngest,
      ...(deliveryHealthy !== undefined ? { deliveryHealthy } : {}),
      ...(kinds
        ? {
            delivery: Object.fromEntries(
              Object.entries(kinds).map(([kind, health]) => [kind, { healthy: health.healthy === true }]),
            ),
          }
        : {}),
    },
  };
}

/** Static mode has no outbox: docs/tracking-api.md#health: `{ ok: true, durableIngest: false }`. */
export class StaticHealth implements HealthReporter {
  async report(): Promise<HealthReport> {
    return { status: 200, body: { ok: true, durableIngest: false } };
  }
}

/**
 * Hosted mode: the outbox must be readable (else 503), and each delivery consumer group's
 * lag (messages not yet committed) tells whether delivery keeps up. Probes share one check
 * every `cacheMs`, on one admin connection.
 */
export class OutboxHealth implements HealthReporter {
  private admin: Admin | undefined;
  private cached: { at: number; report: HealthReport } | undefined;
  private inFlight: Promise<HealthReport> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly groups: Record<string, string>,
    private readonly options: { lagThreshold: number; cacheMs?: number; timeoutMs?: number },
  ) {}

  async report(): Promise<HealthReport> {
    if (this.cached && Date.now() - this.cached.at < (this.options.cacheMs ?? 2000))
      return this.cached.report;
    this.inFlight ??= this.check().finally(() => (this.inFlight = undefined));
    const report = await this.inFlight;
    this.cached = { at: Date.now(), report };
    return report;
  }

  async close(): Promise<void> {
    await this.admin?.disconnect();
  }

  private async check(): Promise<HealthReport> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), this.options.timeoutMs ?? 3000);
      });
      return await Promise.race([this.measure(), timeout]);
    } catch {
      await this.admin?.disconnect().catch(() => undefined);
      this.admin = undefined;
      return { status: 503, body: { ok: false, durableIngest: true, deliveryHealthy: false, delivery: {} } };
    } finally {
      clearTimeout(timer);
    }
  }

  private async measure(): Promise<HealthReport> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    const delivery: Record<string, DeliveryKindHealth> = {};
    // Kinds nobody runs have no group at the broker and are not reported.
    const known = new Set((await this.admin.listGroups()).groups.map((g) => g.groupId));
    const ends = await this.admin.fetchTopicOffsets(this.topic);
    for (const [kind, groupId] of Object.entries(this.groups)) {
      if (!known.has(groupId)) continue;
      const lag = (await consumerGroupLag(this.admin, groupId, this.topic, ends)).total;
      delivery[kind] = { groupId, lag, healthy: lag <= this.options.lagThreshold };
    }
    const deliveryHealthy = Object.values(delivery).every((d) => d.healthy);
    return { status: 200, body: { ok: true, durableIngest: true, deliveryHealthy, delivery } };
  }
}
