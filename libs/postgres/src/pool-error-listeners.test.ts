import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { createScratchDatabase } from './database-admin';
import { quietOnLostConnections } from './guarded-connection';
import { DEFAULT_DATABASE_URL } from './postgres-config';

// Every node-postgres pool, in the product and in the tests, listens for 'error'. pg-pool
// re-emits a client's error on the pool; with no listener that is an uncaught exception that
// ends the process: a service when PostgreSQL restarts, a test run when a suite drops its
// scratch database right after pool.end() (which resolves before the backends have exited).

const repo = path.resolve(__dirname, '../../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) return [];
    if (statSync(full).isDirectory()) return sources(full);
    return /\.(ts|js|mjs)$/.test(name) && full !== __filename ? [full] : [];
  });
}

/** The pools `text` makes (`const x = new Pool(`) that nothing in it gives an 'error' listener. */
export function poolsWithoutListener(text: string): string[] {
  return [...text.matchAll(/(?:const|let)\s+(\w+)\s*=\s*new\s+(?:pg\.)?Pool\(/g)]
    .map((match) => match[1]!)
    .filter(
      (name) =>
        !new RegExp(`quietOnLostConnections\\(\\s*${name}\\s*\\)|\\b${name}\\.on\\(\\s*'error'`).test(text),
    );
}

describe('pools listen for errors', () => {
  it('finds a pool without a listener, and not one with', () => {
    expect(poolsWithoutListener("const direct = new Pool({ max: 2 });\ndirect.query('x');")).toEqual([
      'direct',
    ]);
    expect(poolsWithoutListener('const p = new pg.Pool(c);\nquietOnLostConnections(p);')).toEqual([]);
    expect(poolsWithoutListener("const p = new Pool(c);\np.on('error', () => undefined);")).toEqual([]);
    expect(poolsWithoutListener("const p = new Pool(c);\nconst q = new Pool(c);\nq.on('error', f);")).toEqual(
      ['p'],
    );
  });

  it('holds in every app, library and tool', () => {
    const found = ['apps', 'libs', 'tools'].flatMap((top) =>
      sources(path.join(repo, top)).flatMap((file) =>
        poolsWithoutListener(readFileSync(file, 'utf8')).map(
          (name) => `${path.relative(repo, file)}: ${name}`,
        ),
      ),
    );
    expect(found).toEqual([]);
  });

  it('a pool ended just before its database is dropped with FORCE throws nothing', async () => {
    for (let round = 0; round < 5; round += 1) {
      const db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'ended pool');
      const pool = new Pool({ connectionString: db.url, max: 4 });
      quietOnLostConnections(pool);
      const clients = await Promise.all([1, 2, 3, 4].map(() => pool.connect()));
      for (const client of clients) client.release();
      await pool.end();
      await db.drop();
    }
  });
});
