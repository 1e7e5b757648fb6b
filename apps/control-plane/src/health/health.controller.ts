import { Controller, Get, Response, Route, Tags } from '@tsoa/runtime';
import type { DataSource } from 'typeorm';

export interface HealthStatus {
  ok: boolean;
  database: 'up' | 'down';
}

/** For load balancers and Kubernetes probes; needs no API key. */
@Route('health')
@Tags('Operations')
export class HealthController extends Controller {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  /** 200 when the service can reach its database, 503 otherwise. */
  @Get()
  @Response<HealthStatus>(503, 'The database cannot be reached')
  async getHealth(): Promise<HealthStatus> {
    try {
      await this.dataSource.query('SELECT 1');
      return { ok: true, database: 'up' };
    } catch {
      this.setStatus(503);
      return { ok: false, database: 'down' };
    }
  }
}
