import {
  Body,
  Controller,
  Hidden,
  Path,
  Post,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { ResolvedWarehouse } from '@pipeline/tenancy';
import type { FunctionBindings } from '../functions/function-bindings';
import type { Problem } from '../http/problem';
import type { ResolveWarehouseBody, WarehouseStatusReport } from '../warehouse-registry/warehouse.dto';
import type { WarehousePlacements } from '../warehouse-registry/warehouse-placements';
import type { WarehouseRegistry } from '../warehouse-registry/warehouse-registry';

/**
 * Internal: the warehouse consumer asks where an account's rows go, with the password to get
 * there (the only answer that carries one) and the function its warehouse binds, and reports what it met at a warehouse. Its token
 * (INTERNAL_TOKEN_DELIVERY_WAREHOUSE) opens these two endpoints only; ingestion's opens neither.
 */
@Hidden()
@Route('internal/v1/warehouses')
@Tags('Internal')
export class WarehouseResolutionController extends Controller {
  constructor(
    private readonly placements: WarehousePlacements,
    private readonly registry: WarehouseRegistry,
    private readonly functions: FunctionBindings,
  ) {
    super();
  }

  @Post('resolve')
  @Security('internal_token', ['warehouses.resolve'])
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'account_not_found')
  @Response<Problem>(503, 'warehouse_not_configured')
  async resolveWarehouse(@Body() body: ResolveWarehouseBody): Promise<{ data: ResolvedWarehouse }> {
    const resolved = await this.placements.resolve(body.accountId);
    // The version the account's warehouse binds rides with its placement: the consumer caches
    // both per account and drops both on the account's tenant_changed.
    return { data: { ...resolved, function: await this.functions.warehouseFunction(body.accountId) } };
  }

  @Post('{warehouseId}/status')
  @Security('internal_token', ['warehouses.report'])
  @SuccessResponse(204, 'Recorded')
  @Response<Problem>(400, 'validation_failed')
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'warehouse_not_found')
  async reportWarehouseStatus(
    @Path() warehouseId: string,
    @Body() body: WarehouseStatusReport,
  ): Promise<void> {
    await this.registry.reportStatus(warehouseId, body.status, body.detail);
    this.setStatus(204);
  }
}
