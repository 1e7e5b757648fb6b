import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { WarehousePlacements } from '../warehouse-registry/warehouse-placements';
import type { AccountWarehouse } from './account-warehouse.dto';
import { tenantStatusDetail } from './tenant-status-detail';

/**
 * The account's warehouse: the service's PostgreSQL or, once the account is moved onto it, the
 * account's own (a postgres_warehouse app). Read with `apps.read`: a customer's warehouse is
 * one of the account's apps.
 */
@Route('api/v1/warehouse')
@Tags('Warehouse')
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait',
)
export class AccountWarehouseController extends Controller {
  constructor(private readonly placements: WarehousePlacements) {
    super();
  }

  /** Where the account's events, users, groups and imported streams are loaded, and its status. */
  @Get()
  @Security('api_key', ['apps.read'])
  @Response<Problem>(
    503,
    'warehouse_not_configured: no default warehouse yet (the control plane has not started since the upgrade)',
  )
  async getAccountWarehouse(@Request() request: ExpressRequest): Promise<{ data: AccountWarehouse }> {
    // An account created while there was no default is placed now, as a resolve would.
    const placed = await this.placements.summaryOf(principalOf(request).accountId);
    return {
      data: {
        warehouseId: placed.warehouseId,
        owner: placed.owner,
        engine: placed.engine,
        schema: placed.schema,
        epoch: placed.epoch,
        status: placed.status,
        statusDetail: tenantStatusDetail(placed.owner, placed.status, placed.statusDetail),
        statusChangedAt: placed.statusChangedAt.toISOString(),
        appId: placed.appId,
      },
    };
  }
}
