import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import { AccountEntity } from './accounts/account.entity';
import { AppEntity } from './apps/app.entity';
import { ApiKeyEntity } from './auth/api-key.entity';
import { IntegrationEntity } from './integrations/integration.entity';
import { JobEntity } from './jobs/job.entity';
import { SourceEntity } from './sources/source.entity';
import { TaskEntity } from './tasks/task.entity';
import { TaskRunEntity } from './tasks/task-run.entity';
import { WriteKeyEntity } from './write-keys/write-key.entity';
import { AccountWarehouseEntity, WarehouseEntity } from './warehouse-registry/warehouse.entity';
import { WarehouseMoveEntity } from './warehouse-registry/warehouse-move.entity';
import { CreateAccounts1795316766691 } from './database/migrations/1795316766691-create-accounts';
import { WriteKeyRateLimits1795320137749 } from './database/migrations/1795320137749-write-key-rate-limits';
import { CreateManagementResources1795317946270 } from './database/migrations/1795317946270-create-management-resources';
import { CreateTasks1795400000000 } from './database/migrations/1795400000000-create-tasks';
import { SyncEngine1795450000000 } from './database/migrations/1795450000000-sync-engine';
import { IntegrationRuns1795460000000 } from './database/migrations/1795460000000-integration-runs';
import { CreateUsage1795500000000 } from './database/migrations/1795500000000-create-usage';
import { UsageMeteringState1795510000000 } from './database/migrations/1795510000000-usage-metering-state';
import { FairQueue1795610000000 } from './database/migrations/1795610000000-fair-queue';
import { CreateWarehouses1795700000000 } from './database/migrations/1795700000000-create-warehouses';
import { CustomerWarehouses1795720000000 } from './database/migrations/1795720000000-customer-warehouses';
import { WarehouseMoves1795800000000 } from './database/migrations/1795800000000-warehouse-moves';
import { MoveToSchema1795820000000 } from './database/migrations/1795820000000-move-to-schema';
import { ClickHouseWarehouses1795900000000 } from './database/migrations/1795900000000-clickhouse-warehouses';
import { DeadLetters1796000000000 } from './database/migrations/1796000000000-dead-letters';
import { DeletableWarehouses1796100000000 } from './database/migrations/1796100000000-deletable-warehouses';
import { DeadLetterPreview1796200000000 } from './database/migrations/1796200000000-dead-letter-preview';
import { Regulations1796300000000 } from './database/migrations/1796300000000-regulations';
import { TrackingPlans1796400000000 } from './database/migrations/1796400000000-tracking-plans';
import { QuarantinedEvents1796500000000 } from './database/migrations/1796500000000-quarantined-events';
import { TrackingPlanAlerts1796600000000 } from './database/migrations/1796600000000-tracking-plan-alerts';
import { Functions1796700000000 } from './database/migrations/1796700000000-functions';
import { DeadLetterEntity } from './dead-letters/dead-letter.entity';
import {
  TrackingPlanBindingEntity,
  TrackingPlanEntity,
  TrackingPlanVersionEntity,
} from './tracking-plans/tracking-plan.entity';
import { FunctionBindingEntity, FunctionEntity, FunctionVersionEntity } from './functions/function.entity';
import { dataSourceFor } from './database/data-source';

// The one place that names every feature's entity and every migration. TypeORM needs the whole
// list in one data source; listing it here, above the features, keeps database/ below them.

/** Entities and migrations are listed explicitly: no globs that differ between src/ and dist/. */
export const entities = [
  AccountEntity,
  ApiKeyEntity,
  WriteKeyEntity,
  AppEntity,
  SourceEntity,
  IntegrationEntity,
  JobEntity,
  TaskEntity,
  TaskRunEntity,
  WarehouseEntity,
  AccountWarehouseEntity,
  WarehouseMoveEntity,
  DeadLetterEntity,
  TrackingPlanEntity,
  TrackingPlanVersionEntity,
  TrackingPlanBindingEntity,
  FunctionEntity,
  FunctionVersionEntity,
  FunctionBindingEntity,
];
export const migrations = [
  CreateAccounts1795316766691,
  CreateManagementResources1795317946270,
  WriteKeyRateLimits1795320137749,
  CreateTasks1795400000000,
  SyncEngine1795450000000,
  IntegrationRuns1795460000000,
  CreateUsage1795500000000,
  UsageMeteringState1795510000000,
  FairQueue1795610000000,
  CreateWarehouses1795700000000,
  CustomerWarehouses1795720000000,
  WarehouseMoves1795800000000,
  MoveToSchema1795820000000,
  ClickHouseWarehouses1795900000000,
  DeadLetters1796000000000,
  DeletableWarehouses1796100000000,
  DeadLetterPreview1796200000000,
  Regulations1796300000000,
  TrackingPlans1796400000000,
  QuarantinedEvents1796500000000,
  TrackingPlanAlerts1796600000000,
  Functions1796700000000,
];

/** A data source over the control plane's whole model (its pool holds `poolMax` connections). */
export function createDataSource(options: { url: string; poolMax: number }): DataSource {
  return dataSourceFor({ entities, migrations }, options);
}
