export {
  createScratchDatabase,
  databaseName,
  ensureDatabase,
  withDatabase,
  type ScratchDatabase,
} from './database-admin';
export { DEFAULT_DATABASE_URL, postgresConfigSchema, type PostgresConfig } from './postgres-config';
export {
  customerConnectionProblem,
  guardedSocketFactory,
  InvalidWarehouseConnection,
  warehouseClient,
  quietOnLostConnections,
  warehouseConnectionPool,
  type GuardOptions,
  type WarehousePoolOptions,
} from './guarded-connection';
export {
  checkWarehouseConnection,
  classifyWarehouseCheckError,
  warehouseCheckFailures,
  warehouseSchemaPattern,
  type WarehouseCheckFailure,
  type WarehouseCheckResult,
} from './warehouse-connection-check';
