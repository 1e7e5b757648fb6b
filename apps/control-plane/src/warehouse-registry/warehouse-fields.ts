import { warehouseEngines, warehouseTlsModes, type WarehouseEngineName } from '@pipeline/tenancy';
import type { WarehouseView } from './warehouse.dto';
import type { WarehouseEntity } from './warehouse.entity';

// What a warehouse's fields may hold and how a warehouse is answered: pure, so that every rule
// is tested without a database.

export const DEFAULT_MAX_CONNECTIONS = 10;
export const MAX_STATUS_DETAIL_LENGTH = 500;
/** What a password is answered as: it is write-only. */
export const PASSWORD_MASK = '**********';

const NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const HOST = /^[A-Za-z0-9._:-]{1,253}$/;
/** Bytes of a PostgreSQL identifier (NAMEDATALEN - 1). */
const IDENTIFIER_MAX = 63;
const PASSWORD_MAX = 1000;
// eslint-disable-next-line no-control-regex -- the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A ClickHouse database name: a plain identifier, the same unquoted wherever the engine names it. */
const CLICKHOUSE_DATABASE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * A warehouse's port when none is given: PostgreSQL's 5432; ClickHouse's HTTP interface, 8123,
 * or its HTTPS one, 8443, when TLS is on.
 */
export function defaultPortOf(engine: WarehouseEngineName | string | undefined, tlsMode: string): number {
  if (engine === 'clickhouse') return tlsMode === 'disable' ? 8123 : 8443;
  return 5432;
}

/** The fields of a new warehouse, unchecked (from the API or the CLI). */
export interface NewWarehouse {
  name: string;
  /** `postgres` when absent. */
  engine?: string;
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  tlsMode: string;
  maxConnections?: number;
  isDefault?: boolean;
}

export function viewOf(entity: WarehouseEntity): WarehouseView {
  return {
    id: entity.id,
    name: entity.name,
    engine: entity.engine,
    owner: entity.owner,
    accountId: entity.accountId,
    appId: entity.appId,
    schema: entity.schema,
    host: entity.host,
    port: entity.port,
    database: entity.database,
    user: entity.user,
    password: PASSWORD_MASK,
    tlsMode: entity.tlsMode,
    maxConnections: entity.maxConnections,
    isDefault: entity.isDefault,
    status: entity.status,
    statusDetail: entity.statusDetail,
    statusChangedAt: entity.statusChangedAt.toISOString(),
    createdAt: entity.createdAt.toISOString(),
  };
}

/** Every problem of a new warehouse's fields, as `body.<field>` errors. */
export function fieldProblems(input: NewWarehouse): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const check = (ok: boolean, field: string, message: string) => {
    if (!ok) problems.push({ path: `body.${field}`, message });
  };
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  check(
    NAME.test(text(input.name)),
    'name',
    'lower-case letters, digits, _ and -, 1 to 63, starting with a letter or digit',
  );
  check(
    HOST.test(text(input.host)),
    'host',
    'a host name or IP address (letters, digits, . : - _), 1 to 253 characters',
  );
  const engine = input.engine ?? 'postgres';
  check(
    (warehouseEngines as readonly string[]).includes(engine),
    'engine',
    `one of ${warehouseEngines.join(', ')}`,
  );
  check(
    Number.isInteger(input.port) && input.port >= 1 && input.port <= 65535,
    'port',
    'a whole number from 1 to 65535',
  );
  if (engine === 'clickhouse')
    check(
      CLICKHOUSE_DATABASE.test(text(input.database)),
      'database',
      'a ClickHouse database name: letters, digits and _, 1 to 63, not starting with a digit',
    );
  for (const field of engine === 'clickhouse' ? (['user'] as const) : (['database', 'user'] as const)) {
    const value = text(input[field]);
    check(
      // PostgreSQL cuts identifiers at 63 bytes: a longer name would reach another database.
      value.length >= 1 && Buffer.byteLength(value, 'utf8') <= IDENTIFIER_MAX && !CONTROL.test(value),
      field,
      `1 to ${IDENTIFIER_MAX} bytes, no control characters`,
    );
  }
  check(
    typeof input.password === 'string' && input.password.length <= PASSWORD_MAX,
    'password',
    `at most ${PASSWORD_MAX} characters`,
  );
  check(
    (warehouseTlsModes as readonly string[]).includes(text(input.tlsMode)),
    'tlsMode',
    `one of ${warehouseTlsModes.join(', ')}`,
  );
  const max = input.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  check(Number.isInteger(max) && max >= 1 && max <= 1000, 'maxConnections', 'a whole number from 1 to 1000');
  return problems;
}
