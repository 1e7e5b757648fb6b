import {
  Body,
  Controller,
  Get,
  Path,
  Post,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Problem } from '../http/problem';
import type { StartWarehouseMoveBody, WarehouseMoveView } from './warehouse.dto';
import type { WarehouseMoves } from './warehouse-moves';

/**
 * Moves of accounts between platform warehouses, online: writers fill both warehouses while
 * the account's tables are copied and compared, then the placement moves (epoch + 1) and the
 * source's copy is dropped. The job runner runs each move; a restart resumes it at its stage.
 */
@Route('api/v1/operator/warehouse-moves')
@Tags('Operator')
@Response<Problem>(401, 'invalid_operator_token: no operator token, or another one')
@Response<Problem>(404, 'not_found: OPERATOR_API_TOKEN is unset, so the operator API is off')
@Response<Problem>(
  429,
  'too_many_failed_attempts: this address presented OPERATOR_TOKEN_FAILURES_PER_MINUTE wrong operator tokens this minute',
)
export class OperatorWarehouseMovesController extends Controller {
  constructor(private readonly moves: WarehouseMoves) {
    super();
  }

  /** The newest moves first (at most 100), with their stage and progress. */
  @Get()
  @Security('operator_token')
  async listWarehouseMoves(): Promise<{ data: WarehouseMoveView[] }> {
    return { data: await this.moves.list() };
  }

  /** Starts moving an account to another platform warehouse; the move runs as a job. */
  @Post()
  @Security('operator_token')
  @SuccessResponse(202, 'Accepted')
  @Response<Problem>(400, 'validation_failed: accountId is not a UUID, or toWarehouse is missing')
  @Response<Problem>(404, 'account_not_found, or warehouse_not_found (toWarehouse)')
  @Response<Problem>(
    409,
    "warehouse_move_in_progress: the account is moving already; already_on_warehouse; warehouse_not_platform: a customer's warehouse on either side",
  )
  async startWarehouseMove(@Body() body: StartWarehouseMoveBody): Promise<{ data: WarehouseMoveView }> {
    const data = await this.moves.start(body);
    this.setStatus(202);
    return { data };
  }

  /**
   * Cancels a move that has not finished, at any stage: it ends as `failed` with
   * `warehouse_move_cancelled` and its job slot is freed. Before the cut-over the account stays
   * on its source (writers stop writing to the target); after it the account stays on the
   * target and the source's schema is kept.
   */
  @Post('{moveId}/cancel')
  @Security('operator_token')
  @Response<Problem>(404, 'warehouse_move_not_found')
  @Response<Problem>(409, 'warehouse_move_finished: the move is done or failed already')
  async cancelWarehouseMove(@Path() moveId: string): Promise<{ data: WarehouseMoveView }> {
    return { data: await this.moves.cancel(moveId) };
  }

  /** One move: its stage, rows copied per table, the last comparison and any error. */
  @Get('{moveId}')
  @Security('operator_token')
  @Response<Problem>(404, 'warehouse_move_not_found')
  async getWarehouseMove(@Path() moveId: string): Promise<{ data: WarehouseMoveView }> {
    return { data: await this.moves.get(moveId) };
  }
}
