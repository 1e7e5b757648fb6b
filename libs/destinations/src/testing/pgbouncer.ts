import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** A PgBouncer started for a test, in front of one PostgreSQL server. */
export interface PgBouncer {
  port: number;
  /** `databaseUrl` with PgBouncer's address instead of the server's. */
  urlOf(databaseUrl: string): string;
  /** Its log so far (for a failing test's message). */
  log(): string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** The server PgBouncer forwards to, as a connection URL (its user and password log in). */
  serverUrl: string;
  poolMode?: 'session' | 'transaction' | 'statement';
  /** Server connections per database and user: few, so that clients share them. */
  poolSize?: number;
  /** The binary; Debian's package installs it here (tools/lib/bootstrap.sh, ensure_pgbouncer). */
  binary?: string;
  /** How long to wait for it to accept connections. */
  startTimeoutMs?: number;
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));

/** A libpq connection string value, quoted. */
const value = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * Starts PgBouncer on a free port of 127.0.0.1, every database name forwarded to the server of
 * `serverUrl` as its user (auth_type any: the test's clients send no password). PgBouncer
 * refuses to run as root: as root it runs as the `postgres` user, which then owns its directory.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = options.binary ?? process.env.PGBOUNCER_PATH ?? '/usr/sbin/pgbouncer';
  if (!existsSync(binary))
    throw new Error(`pgbouncer is not installed at ${binary} (apt-get install pgbouncer)`);
  const server = new URL(options.serverUrl);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  const root = userInfo().uid === 0;
  const target = [
    `host=${value(server.hostname || '127.0.0.1')}`,
    `port=${server.port || '5432'}`,
    `user=${value(decodeURIComponent(server.username || 'postgres'))}`,
    ...(server.password ? [`password=${value(decodeURIComponent(server.password))}`] : []),
  ].join(' ');
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(
    config,
    [
      '[databases]',
      `* = ${target}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 2}`,
      'max_client_conn = 500',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  chmodSync(dir, 0o755);
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
    chownSync(config, uid, gid);
  }
  const child = root
    ? spawn('runuser', ['-u', 'postgres', '--', binary, config], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(binary, [config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const log = () => {
    const file = join(dir, 'pgbouncer.log');
    return `${stderr}${existsSync(file) ? readFileSync(file, 'utf8') : ''}`;
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      // SIGINT: PgBouncer's "safe shutdown" waits for clients; SIGTERM closes at once.
      child.kill('SIGTERM');
      await exited(child);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 10_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const text = log();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`pgbouncer exited before it accepted connections:\n${text}`);
    }
    if (await accepts(port)) break;
    if (Date.now() > deadline) {
      const text = log();
      await stop();
      throw new Error(`pgbouncer did not accept connections on ${port} in time:\n${text}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    urlOf(databaseUrl: string) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      url.password = '';
      return url.toString();
    },
    log,
    stop,
  };
}
