import type { Logger } from '@pipeline/logger';
import type { TenantRecord } from '@pipeline/tenancy';

export class ControlPlaneUnavailable extends Error {}

/** The control plane's internal write-key resolution (the only write-key source in hosted mode). */
export class ControlPlaneClient {
  constructor(
    private readonly baseUrl: string,
    private readonly serviceToken: string,
    private readonly logger: Logger,
    private readonly timeoutMs = 2000,
  ) {}

  /** The tenant record, null for an unknown key; throws ControlPlaneUnavailable when it cannot be asked. */
  async resolve(writeKey: string): Promise<TenantRecord | null> {
    let response: Response;
    try {
      response = await fetch(new URL('/internal/v1/write-keys/resolve', this.baseUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${this.serviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ writeKey }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ControlPlaneUnavailable((error as Error).message);
    }
    if (response.status === 404) return null;
    if (response.ok) return ((await response.json()) as { data: TenantRecord }).data;
    if (response.status === 401) this.logger.error('the control plane refused INTERNAL_SERVICE_TOKEN');
    throw new ControlPlaneUnavailable(`control plane answered ${response.status}`);
  }
}
