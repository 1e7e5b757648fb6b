import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startTestCluster, useTestClusters, type TestCluster } from './index';
import { processAlive } from './test-clusters';

// Real servers: each cluster is a new initdb'd PostgreSQL on its own port.
const clusters = useTestClusters();

async function marker(cluster: TestCluster): Promise<string | undefined> {
  const rows = await cluster.query<{ value: string }>('SELECT value FROM marker', [], 'app');
  return rows[0]?.value;
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Whether a fresh connection to the cluster's port is refused (nothing listens any more). */
async function refuses(cluster: TestCluster): Promise<boolean> {
  const client = new Client({
    host: cluster.host,
    port: cluster.port,
    user: cluster.user,
    database: 'postgres',
  });
  try {
    await client.connect();
    await client.end();
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ECONNREFUSED';
  }
}

describe('extra test clusters', () => {
  let a: TestCluster;
  let b: TestCluster;

  beforeAll(async () => {
    [a, b] = await Promise.all([clusters.start('first'), clusters.start('second')]);
    for (const [cluster, value] of [
      [a, 'from a'],
      [b, 'from b'],
    ] as const) {
      await cluster.createDatabase('app');
      await cluster.query('CREATE TABLE marker (value text)', [], 'app');
      await cluster.query('INSERT INTO marker VALUES ($1)', [value], 'app');
    }
  }, 120_000);

  it('answers on its own port with its own data', async () => {
    expect(a.port).not.toBe(b.port);
    expect(a.url).toBe(`postgres://postgres@127.0.0.1:${a.port}/postgres`);
    expect(a.urlFor('app')).toBe(`postgres://postgres@127.0.0.1:${a.port}/app`);
    expect({ host: a.host, database: a.database, user: a.user, password: a.password }).toEqual({
      host: '127.0.0.1',
      database: 'postgres',
      user: 'postgres',
      password: '',
    });
    expect(await marker(a)).toBe('from a');
    expect(await marker(b)).toBe('from b');

    const client = new Client({ connectionString: b.urlFor('app') });
    await client.connect();
    const { rows } = await client.query<{ port: string }>("SELECT current_setting('port') AS port");
    await client.end();
    expect(Number(rows[0]?.port)).toBe(b.port);
  });

  it('stops one while the other keeps answering, and restarts it with its data', async () => {
    await a.stop();
    expect(a.running()).toBe(false);
    expect(await refuses(a)).toBe(true);
    expect(await marker(b)).toBe('from b');

    await a.start();
    expect(a.running()).toBe(true);
    expect(await marker(a)).toBe('from a');

    const before = a.pid();
    await a.restart();
    expect(a.pid()).not.toBe(before);
    expect(await marker(a)).toBe('from a');
  }, 60_000);

  it('kills a postmaster like a crash; committed rows are there after a start', async () => {
    await b.query("INSERT INTO marker VALUES ('just before the kill')", [], 'app');
    const session = new Client({ connectionString: b.urlFor('app') });
    session.on('error', () => undefined);
    await session.connect();
    const postmaster = b.pid() as number;

    await b.kill();
    expect(b.running()).toBe(false);
    expect(processAlive(postmaster)).toBe(false);
    await expect(session.query('SELECT 1')).rejects.toThrow();
    expect(await refuses(b)).toBe(true);
    expect(await marker(a)).toBe('from a');

    await b.start();
    const rows = await b.query<{ value: string }>('SELECT value FROM marker ORDER BY value', [], 'app');
    expect(rows.map((r) => r.value)).toEqual(['from b', 'just before the kill']);
  }, 60_000);

  it('deletes its data and leaves no server when destroyed', async () => {
    const c = await startTestCluster('short lived');
    const pid = c.pid() as number;
    expect(existsSync(c.dataDir)).toBe(true);
    await c.destroy();
    await c.destroy();
    expect(existsSync(c.dataDir)).toBe(false);
    expect(processAlive(pid)).toBe(false);
    await expect(c.start()).rejects.toThrow(/destroyed/);
  }, 60_000);

  it('leaves no server behind when the process exits without cleaning up', async () => {
    // A separate Node process starts a cluster and exits at once, as a crashed test run would.
    const script = [
      `const { startTestCluster } = require(${JSON.stringify(path.join(__dirname, 'test-clusters.ts'))});`,
      "startTestCluster('orphan').then((c) => {",
      '  console.log(JSON.stringify({ pid: c.pid(), dir: c.dataDir }));',
      '  process.exit(0);',
      '});',
    ].join('\n');
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--experimental-transform-types', '--no-warnings', '-e', script],
        { cwd: path.join(__dirname, '..', '..'), timeout: 60_000 },
        (error, out, err) =>
          error ? reject(new Error(`${error.message}\n${String(err)}`)) : resolve(String(out)),
      ),
    );
    const orphan = JSON.parse(stdout.trim().split('\n').at(-1) as string) as { pid: number; dir: string };
    expect(orphan.pid).toBeGreaterThan(0);
    expect(existsSync(orphan.dir)).toBe(false);
    // SIGKILL is delivered asynchronously: the postmaster goes within a bound, not at once.
    await waitFor(() => !processAlive(orphan.pid), 10_000);
    expect(processAlive(orphan.pid)).toBe(false);
  }, 60_000);
});
