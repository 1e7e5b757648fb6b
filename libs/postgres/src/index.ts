export {
  createScratchDatabase,
  databaseName,
  ensureDatabase,
  withDatabase,
  type ScratchDatabase,
} from './database-admin';
export { DEFAULT_DATABASE_URL, postgresConfigSchema, type PostgresConfig } from './postgres-config';
