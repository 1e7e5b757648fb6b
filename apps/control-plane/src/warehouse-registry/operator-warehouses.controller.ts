import {
  Body,
  Controller,
  Delete,
  Get,
  Patch,
  Path,
  Post,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Problem } from '../http/problem';
import type {
  AbandonedPlacementView,
  CreateWarehouseBody,
  PlaceAccountBody,
  PlacedAccount,
  UpdateWarehouseBody,
  WarehouseSummary,
  WarehouseView,
} from './warehouse.dto';
import type { WarehouseRegistry } from './warehouse-registry';
import type { WarehousePlacements } from './warehouse-placements';

/**
 * The operator's warehouses: the PostgreSQL servers accounts' warehouse data lives on. Served on
 * OPERATOR_PORT only (the public PORT answers 404) and needs OPERATOR_API_TOKEN (never an
 * account's API key); while it is unset the listener is not opened. Passwords are write-only:
 * every answer masks them, and a stored one is only ever sent to the server it was entered for.
 */
@Route('api/v1/operator/warehouses')
@Tags('Operator')
@Response<Problem>(401, 'invalid_operator_token: no operator token, or another one')
@Response<Problem>(404, 'not_found: OPERATOR_API_TOKEN is unset, so the operator API is off')
@Response<Problem>(
  429,
  'too_many_failed_attempts: this address presented OPERATOR_TOKEN_FAILURES_PER_MINUTE wrong operator tokens this minute',
)
export class OperatorWarehousesController extends Controller {
  constructor(
    private readonly warehouses: WarehouseRegistry,
    private readonly placements: WarehousePlacements,
  ) {
    super();
  }

  /** Every warehouse with its placed accounts' count, their storage and its status. */
  @Get()
  @Security('operator_token')
  async listWarehouses(): Promise<{ data: WarehouseSummary[] }> {
    return { data: await this.warehouses.list() };
  }

  /** Adds a platform warehouse; its password is sealed and never answered. */
  @Post()
  @Security('operator_token')
  @SuccessResponse(201, 'Created')
  @Response<Problem>(400, 'validation_failed: a field is missing or out of range')
  @Response<Problem>(409, 'warehouse_name_taken: another warehouse has this name')
  async createWarehouse(@Body() body: CreateWarehouseBody): Promise<{ data: WarehouseView }> {
    const data = await this.warehouses.add(body);
    this.setStatus(201);
    return { data };
  }

  /** One warehouse by id or name. */
  @Get('{warehouse}')
  @Security('operator_token')
  @Response<Problem>(404, 'warehouse_not_found')
  async getWarehouse(@Path() warehouse: string): Promise<{ data: WarehouseSummary }> {
    return { data: await this.warehouses.get(warehouse) };
  }

  /**
   * Changes a warehouse's connection: a moved host, a rotated password. The consumers' caches
   * of its accounts are told at once (REDIS_URL), and resolve the new connection. A new host,
   * port or TLS mode needs the password in the same request.
   */
  @Patch('{warehouse}')
  @Security('operator_token')
  @Response<Problem>(400, 'validation_failed: a field is out of range')
  @Response<Problem>(404, 'warehouse_not_found')
  @Response<Problem>(409, "warehouse_owned_by_app: a customer's warehouse changes with its app")
  @Response<Problem>(
    422,
    'secret_required_for_new_host: host, port or tlsMode changes and password is not entered again (the stored one is sent only to the server it was entered for)',
  )
  async updateWarehouse(
    @Path() warehouse: string,
    @Body() body: UpdateWarehouseBody,
  ): Promise<{ data: WarehouseView }> {
    return { data: await this.warehouses.update(warehouse, body) };
  }

  /** Makes a platform warehouse the default: accounts created from now on are placed there. */
  @Post('{warehouse}/default')
  @Security('operator_token')
  @Response<Problem>(404, 'warehouse_not_found')
  @Response<Problem>(409, "warehouse_not_platform: a customer's warehouse cannot be the default")
  async setDefaultWarehouse(@Path() warehouse: string): Promise<{ data: WarehouseView }> {
    return { data: await this.warehouses.setDefault(warehouse) };
  }

  /** The accounts placed on a warehouse, with their schema and epoch. */
  @Get('{warehouse}/accounts')
  @Security('operator_token')
  @Response<Problem>(404, 'warehouse_not_found')
  async listWarehouseAccounts(@Path() warehouse: string): Promise<{ data: PlacedAccount[] }> {
    return { data: await this.warehouses.accountsOf(warehouse) };
  }

  /**
   * Re-places an account on this warehouse without copying: the way off a warehouse that is
   * gone for good (an online move needs the old server to answer). The account's tables on the
   * old warehouse are left behind, unread; `abandonData: true` says so. The placement's epoch
   * goes up and the consumers are told at once (REDIS_URL), so the account's next events and
   * the ones held for the lost warehouse load here.
   */
  @Post('{warehouse}/accounts')
  @Security('operator_token')
  @Response<Problem>(
    400,
    'abandon_data_required: abandonData is not true; validation_failed: accountId is not a UUID',
  )
  @Response<Problem>(404, 'warehouse_not_found, or account_not_found')
  @Response<Problem>(
    409,
    "warehouse_move_in_progress: a move of the account is active; already_on_warehouse; warehouse_of_another_account: another account's own server",
  )
  async placeWarehouseAccount(
    @Path() warehouse: string,
    @Body() body: PlaceAccountBody,
  ): Promise<{ data: AbandonedPlacementView }> {
    return { data: await this.placements.placeAbandoningData(warehouse, body) };
  }

  /**
   * Deletes a warehouse's entry (never the server's data) once it holds no account: after its
   * accounts were moved off it, or re-placed with `abandonData`.
   */
  @Delete('{warehouse}')
  @Security('operator_token')
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(404, 'warehouse_not_found')
  @Response<Problem>(
    409,
    "warehouse_in_use: accounts are placed on it (or being moved onto it); warehouse_in_move: an active move's source or target; warehouse_is_default; warehouse_owned_by_app: a customer's warehouse goes with its app",
  )
  async deleteWarehouse(@Path() warehouse: string): Promise<void> {
    await this.warehouses.remove(warehouse);
    this.setStatus(204);
  }

  /**
   * Probes the warehouse now and records its status (active, unavailable or misconfigured):
   * after fixing one, without waiting for the consumers' next report.
   */
  @Post('{warehouse}/check')
  @Security('operator_token')
  @Response<Problem>(404, 'warehouse_not_found')
  async checkWarehouse(@Path() warehouse: string): Promise<{ data: WarehouseView }> {
    return { data: await this.warehouses.check(warehouse) };
  }
}
