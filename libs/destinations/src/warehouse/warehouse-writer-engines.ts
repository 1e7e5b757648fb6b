import { Client } from 'pg';
import type { WarehouseConnection } from '@pipeline/tenancy';
import type { WarehouseEngine } from './warehouse-engine';
import { warehouseErrorKind } from './warehouse-errors';
import type { WarehouseTimeouts } from './warehouse-pool';
import { WarehouseWriter } from './warehouse-writer';

/** What the warehouse consumer asks of a warehouse's engine. */
export type WarehouseLoader = Pick<
  WarehouseEngine,
  'ensureAccount' | 'writeRows' | 'probe' | 'classifyError'
>;

/**
 * Where the consumer gets a warehouse's engine: one per warehouse, its connections its own.
 * The engine registry (WarehouseEngines) is one; so is WarehouseWriterEngines below.
 */
export interface WarehouseEngineSource {
  for(connection: WarehouseConnection): WarehouseLoader;
  close?(): Promise<void>;
}

// node-postgres reads sslmode from a connection string only: `no-verify` is libpq's `require`
// (encrypted, certificate not checked).
const sslmodeOf = { disable: 'disable', require: 'no-verify', 'verify-full': 'verify-full' } as const;

/** The connection as node-postgres's connection string, every part encoded: never logged. */
export function connectionString(connection: WarehouseConnection): string {
  const host = connection.host.includes(':') ? `[${connection.host}]` : connection.host;
  const user = encodeURIComponent(connection.user);
  const password = encodeURIComponent(connection.password);
  return `postgres://${user}:${password}@${host}:${connection.port}/${encodeURIComponent(connection.database)}?sslmode=${sslmodeOf[connection.tlsMode]}`;
}

/** Every field of a connection: a change of any (a rotated password) means a new pool. */
const fingerprintOf = (connection: WarehouseConnection) => JSON.stringify(Object.entries(connection).sort());

class WriterLoader implements WarehouseLoader {
  constructor(
    readonly writer: WarehouseWriter,
    private readonly url: string,
  ) {}

  ensureAccount(account: { schema: string }): Promise<void> {
    return this.writer.ensureSchema(account.schema);
  }

  writeRows(account: { schema: string }, rows: Parameters<WarehouseEngine['writeRows']>[1]) {
    return this.writer.write(account.schema, rows);
  }

  async probe(): Promise<void> {
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  classifyError(error: unknown) {
    return warehouseErrorKind(error);
  }
}

/**
 * Warehouses written through WarehouseWriter, one writer (and pool of `maxConnections`) per
 * warehouse, replaced when its connection changes.
 */
export class WarehouseWriterEngines implements WarehouseEngineSource {
  private readonly loaders = new Map<string, { fingerprint: string; loader: WriterLoader }>();

  constructor(private readonly options: { timeouts?: WarehouseTimeouts; rowsPerCopy?: number } = {}) {}

  for(connection: WarehouseConnection): WarehouseLoader {
    const fingerprint = fingerprintOf(connection);
    const known = this.loaders.get(connection.warehouseId);
    if (known?.fingerprint === fingerprint) return known.loader;
    // Writes under way on the old pool finish; pool.end waits for them.
    if (known) void known.loader.writer.close().catch(() => undefined);
    const url = connectionString(connection);
    const loader = new WriterLoader(
      new WarehouseWriter(url, { poolMax: connection.maxConnections, ...this.options }),
      url,
    );
    this.loaders.set(connection.warehouseId, { fingerprint, loader });
    return loader;
  }

  async close(): Promise<void> {
    const loaders = [...this.loaders.values()];
    this.loaders.clear();
    await Promise.all(loaders.map(({ loader }) => loader.writer.close()));
  }
}
