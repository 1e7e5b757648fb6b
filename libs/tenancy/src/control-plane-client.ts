import type { Logger } from '@pipeline/logger';
import { ControlPlaneUnavailable, lookupOutcome, tenantOfAnswer } from './control-plane-answer';
import type { TenantRecord, WriteKeyRecord } from './tenant-record';

export { ControlPlaneUnavailable } from './control-plane-answer';

/**
 * The control plane's internal tenant lookups: by write key for ingestion (the only write-key
 * source in hosted mode), by write key id for the delivery consumers (the outbox carries the
 * id, never the key or a destination's secrets).
 */
export class ControlPlaneClient {
  constructor(
    private readonly baseUrl: string,
    private readonly serviceToken: string,
    private readonly logger: Logger,
    private readonly timeoutMs = 2000,
  ) {}

  /**
   * What ingestion needs of a key (no destination credentials), null for an unknown key;
   * throws ControlPlaneUnavailable when it cannot be asked.
   */
  resolve(writeKey: string): Promise<WriteKeyRecord | null> {
    return this.post<WriteKeyRecord>('/internal/v1/write-keys/resolve', { writeKey });
  }

  /** The tenant of a write key by its id, revoked or not: what it accepted is still delivered. */
  lookup(writeKeyId: string): Promise<TenantRecord | null> {
    return this.post<TenantRecord>('/internal/v1/write-keys/lookup', { writeKeyId });
  }

  private async post<T>(path: string, body: Record<string, string>): Promise<T | null> {
    let response: Response;
    try {
      response = await fetch(new URL(path, this.baseUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${this.serviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ControlPlaneUnavailable((error as Error).message);
    }
    const outcome = lookupOutcome(response.status);
    if (outcome === 'tenant') return tenantOfAnswer<T>(await response.json());
    if (outcome === 'unknown') return null;
    if (outcome === 'token_refused') this.logger.error('the control plane refused INTERNAL_SERVICE_TOKEN');
    throw new ControlPlaneUnavailable(`control plane answered ${response.status}`);
  }
}
