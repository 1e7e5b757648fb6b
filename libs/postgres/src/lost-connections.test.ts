import type { WarehouseConnection } from '@pipeline/tenancy';
import { warehouseConnectionPool } from './guarded-connection';
import { useTestClusters } from './testing';

// A warehouse server that goes away under a checked-out connection: the query running on it
// fails, a client held between statements fails its next query, and the process goes on. Without
// a listener on each client, node-postgres's 'error' event would be thrown as an uncaught
// exception (pg-pool listens only to idle clients), which jest reports as this test failing.
describe('a warehouse pool when its server is killed', () => {
  const clusters = useTestClusters();

  it('fails the running query and the held client, and throws nothing else', async () => {
    const cluster = await clusters.start('lost-connections');
    const connection: WarehouseConnection = {
      warehouseId: 'lost',
      engine: 'postgres',
      host: cluster.host,
      port: cluster.port,
      database: cluster.database,
      user: cluster.user,
      password: '',
      tlsMode: 'disable',
      owner: 'platform',
      maxConnections: 4,
    };
    const pool = warehouseConnectionPool(connection);
    try {
      const running = await pool.connect();
      const held = await pool.connect();
      const idle = await pool.connect();
      idle.release();
      const sleeping = running.query('SELECT pg_sleep(30)');
      await cluster.kill();
      await expect(sleeping).rejects.toThrow();
      await expect(held.query('SELECT 1')).rejects.toThrow();
      running.release(true);
      held.release(true);
      // The server is back: the pool opens new connections and answers again.
      await cluster.start();
      const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  }, 60_000);
});
