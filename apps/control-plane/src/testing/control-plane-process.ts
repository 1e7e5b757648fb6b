import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { waitUntil } from './wait';

const dist = path.join(__dirname, '../../dist');

/** Fails fast when the process tests run before the build they start. */
export function requireBuiltControlPlane(): void {
  if (!existsSync(path.join(dist, 'main.js'))) {
    throw new Error('build apps/control-plane first: pnpm exec nx build control-plane');
  }
}

/**
 * The built control plane (`dist/main.js`) as operators run it, listening on a random port
 * below Linux's ephemeral range (32768+), so no outgoing connection holds it, and on the next
 * port for the operator API (OPERATOR_PORT, opened only when `env` sets OPERATOR_API_TOKEN). Resolves once
 * /health answers 200; the child is added to `started` so the suite can kill what is left.
 * Its PostgreSQL connections carry `applicationName` (PGAPPNAME), so a test can tell when a
 * killed process has none left.
 */
export async function startControlPlaneProcess(
  env: (port: number) => NodeJS.ProcessEnv,
  started: ChildProcess[],
): Promise<{
  child: ChildProcess;
  base: string;
  /** The operator listener's base URL (OPERATOR_PORT). */
  operatorBase: string;
  applicationName: string;
  stderr: () => string;
  /** Its log lines (JSON, one per line), as far as the last 200 KB. */
  stdout: () => string;
}> {
  const port = 20000 + 2 * Math.floor(Math.random() * 5000);
  const operatorPort = port + 1;
  const applicationName = `control-plane-process-${port}`;
  const child = spawn(process.execPath, [path.join(dist, 'main.js')], {
    env: { ...env(port), OPERATOR_PORT: String(operatorPort), PGAPPNAME: applicationName },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  // Read, so a chatty child never blocks on a full pipe, and kept, to explain a failed exit.
  let stderr = '';
  let stdout = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
  child.stdout?.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString('utf8')).slice(-200_000)));
  const base = `http://127.0.0.1:${port}`;
  await until(
    async () =>
      (
        await request(base)
          .get('/health')
          .catch(() => null)
      )?.status === 200,
    // Generous: a loaded machine starts the process slowly, and this is a bound, not a claim.
    60_000,
  );
  return {
    child,
    base,
    operatorBase: `http://127.0.0.1:${operatorPort}`,
    applicationName,
    stderr: () => stderr,
    stdout: () => stdout,
  };
}

type Queryable = { query(sql: string, parameters: unknown[]): Promise<{ n: number }[]> };

/** How many connections `applicationName` holds to `db`'s database. */
export async function connectionsOf(db: Queryable, applicationName: string): Promise<number> {
  const [row] = await db.query(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
    [applicationName],
  );
  return row?.n ?? 0;
}

/**
 * Resolves once `applicationName` holds no connection to `db`'s database: from then on nothing
 * the (killed) process started can still change a row there, so "nothing changed" can be
 * asserted without waiting an arbitrary time. (A connection to another database, such as one
 * blocked on a warehouse lock, lingers until the lock is released and cannot touch these rows.)
 */
export async function untilDisconnected(db: Queryable, applicationName: string): Promise<void> {
  await until(async () => (await connectionsOf(db, applicationName)) === 0, 60_000);
}

export async function until(predicate: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  await waitUntil('the condition', predicate, timeoutMs);
}

/** The child's exit code (null when a signal ended it). */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

export function killAll(started: ChildProcess[]): void {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
