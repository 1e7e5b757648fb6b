import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  chownSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, type QueryResultRow } from 'pg';

// Extra PostgreSQL servers for tests that need more than the one DATABASE_URL names: several
// warehouses, one of them down, killed or restarted. Each is a new cluster of the installed
// PostgreSQL (initdb + pg_ctl, as tools/lib/throwaway-services.sh starts the test command's),
// trust authentication, user `postgres`, on its own free port of 127.0.0.1, its data in a
// directory of its own under the system temp dir (a checkout under /root is out of the
// `postgres` user's reach, and names shared by parallel suites would collide).

const HOST = '127.0.0.1';
const USER = 'postgres';
const DATABASE = 'postgres';
/** How long pg_ctl waits for a start or stop, and a kill for the server's processes to go. */
const WAIT_SECONDS = 60;

export interface TestClusterOptions {
  /** Connection slots; a few suites' pools at most (the machine is shared). */
  maxConnections?: number;
  /**
   * Roles other than `postgres` log in with their password (scram-sha-256) instead of being
   * trusted: for tests of wrong passwords and least-privilege roles. `postgres` stays trusted.
   */
  passwordLogins?: boolean;
  /** Serve TLS with this certificate and key (PEM) as well as plain connections. */
  tls?: { certificate: string; key: string };
}

/** One extra PostgreSQL server of a test file. */
export interface TestCluster {
  readonly name: string;
  readonly host: string;
  /** Kept across stop/kill/restart, so URLs handed out before stay valid. */
  readonly port: number;
  /** The maintenance database every cluster has; createDatabase makes others. */
  readonly database: string;
  readonly user: string;
  /** Empty: the cluster trusts every local TCP connection. */
  readonly password: string;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly dataDir: string;
  /** The URL of another database on this cluster. */
  urlFor(database: string): string;
  /** Whether the postmaster this helper started is alive. */
  running(): boolean;
  /** The postmaster's pid while running. */
  pid(): number | undefined;
  /** Starts a stopped or killed cluster again on the same port, with the same data. */
  start(): Promise<void>;
  /** Fast shutdown: open sessions are ended, data is kept. */
  stop(): Promise<void>;
  /** SIGKILL to the postmaster (a crash), then waits until none of its processes is left. */
  kill(): Promise<void>;
  /** stop (when running) and start. */
  restart(): Promise<void>;
  /** CREATE DATABASE on this cluster; returns the new database's URL. */
  createDatabase(name: string): Promise<string>;
  /** One query on one short connection (the maintenance database unless named). */
  query<R extends QueryResultRow = QueryResultRow>(
    sql: string,
    params?: unknown[],
    database?: string,
  ): Promise<R[]>;
  /** Stops the server (SIGKILL when a fast stop fails) and deletes its data. Idempotent. */
  destroy(): Promise<void>;
}

export interface TestClusters {
  /** initdb and start a new cluster; `name` shows up in its data directory and errors. */
  start(name: string, options?: TestClusterOptions): Promise<TestCluster>;
  /** Destroys every cluster started through this object. */
  destroyAll(): Promise<void>;
}

interface Command {
  label: string;
  file: string;
  args: string[];
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** initdb and the server refuse to run as root: then they run as the `postgres` user. */
function asPostgresUser(file: string, args: string[]): Command {
  const label = path.basename(file);
  return isRoot()
    ? { label, file: 'runuser', args: ['-u', 'postgres', '--', file, ...args] }
    : { label, file, args };
}

function run(command: Command, timeoutMs = WAIT_SECONDS * 1000 + 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command.file, command.args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) {
        const output = `${String(stdout)}${String(stderr)}`.trim().split('\n').slice(-8).join('\n');
        reject(new Error(`${command.label} failed: ${error.message}\n${output}`));
      } else resolve(String(stdout));
    });
  });
}

/** The bin directory of the installed PostgreSQL, 15 first (the version the stack runs). */
function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root).sort((a, b) => (a === '15' ? -1 : b === '15' ? 1 : Number(b) - Number(a)))
    : [];
  for (const version of versions) {
    const bin = path.join(root, version, 'bin');
    if (existsSync(path.join(bin, 'initdb')) && existsSync(path.join(bin, 'pg_ctl'))) return bin;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'))) return dir;
  }
  throw new Error(
    'No PostgreSQL installation found (initdb and pg_ctl): install Debian’s postgresql package',
  );
}

/** A port nothing listens on now; a server that loses it before binding is retried on another. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

let postgresIds: { uid: number; gid: number } | undefined;
function postgresUser(): { uid: number; gid: number } {
  if (!postgresIds) {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('postgres:'));
    const [, , uid, gid] = line?.split(':') ?? [];
    if (uid === undefined || gid === undefined)
      throw new Error('No `postgres` user to run the test clusters as');
    postgresIds = { uid: Number(uid), gid: Number(gid) };
  }
  return postgresIds;
}

/** Whether `pid` runs; a zombie (dead, not yet reaped by its parent) does not. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The pids of `parent`'s children (the server's backends and auxiliary processes). */
function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) children.push(Number(entry));
    } catch {
      // The process ended while being looked at.
    }
  }
  return children;
}

async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Every cluster of this process still on disk, for the exit backstop. */
const live = new Set<ClusterProcess>();

class ClusterProcess implements TestCluster {
  readonly host = HOST;
  readonly database = DATABASE;
  readonly user = USER;
  readonly password = '';
  port = 0;
  private postmaster: number | undefined;
  private destroyed = false;

  constructor(
    readonly name: string,
    private readonly dir: string,
    private readonly bin: string,
    private readonly maxConnections: number,
    private readonly passwordLogins: boolean,
    private readonly tls: TestClusterOptions['tls'],
  ) {}

  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  get url(): string {
    return this.urlFor(DATABASE);
  }

  urlFor(database: string): string {
    return `postgres://${USER}@${HOST}:${this.port}/${encodeURIComponent(database)}`;
  }

  running(): boolean {
    return this.postmaster !== undefined && processAlive(this.postmaster);
  }

  pid(): number | undefined {
    return this.running() ? this.postmaster : undefined;
  }

  async initialize(): Promise<void> {
    await run(
      asPostgresUser(path.join(this.bin, 'initdb'), [
        '-D',
        this.dataDir,
        '-U',
        USER,
        '--auth=trust',
        '-E',
        'UTF8',
        '--locale=C.UTF-8',
        '--no-sync',
      ]),
    );
    if (this.passwordLogins) this.writeHostRules();
    if (this.tls) this.writeTlsFiles(this.tls);
    let lastError: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      this.port = await freePort();
      this.writeSettings();
      try {
        await this.start();
        return;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }

  /**
   * A test server: its data is thrown away, so no fsync is paid for (the machine does not
   * crash under a test); commits stay synchronous, so a row committed before kill() is there
   * after start(). Small buffers on a shared machine; no Unix socket (every client connects
   * over TCP, and a deep temp path could pass the 107-byte socket path limit).
   */
  private writeSettings(): void {
    const file = path.join(this.dataDir, 'postgresql.auto.conf');
    writeFileSync(
      file,
      [
        `listen_addresses = '${HOST}'`,
        `port = ${this.port}`,
        `unix_socket_directories = ''`,
        `max_connections = ${this.maxConnections}`,
        'shared_buffers = 16MB',
        'fsync = off',
        'full_page_writes = off',
        'autovacuum = off',
        ...(this.tls ? ['ssl = on', "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"] : []),
        '',
      ].join('\n'),
    );
    if (isRoot()) chownSync(file, postgresUser().uid, postgresUser().gid);
  }

  private writeHostRules(): void {
    const file = path.join(this.dataDir, 'pg_hba.conf');
    writeFileSync(
      file,
      ['host all postgres 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 scram-sha-256', ''].join('\n'),
    );
    if (isRoot()) chownSync(file, postgresUser().uid, postgresUser().gid);
  }

  private writeTlsFiles(tls: { certificate: string; key: string }): void {
    for (const [name, content] of [
      ['server.crt', tls.certificate],
      ['server.key', tls.key],
    ] as const) {
      const file = path.join(this.dataDir, name);
      // The server refuses a key others can read.
      writeFileSync(file, content, { mode: 0o600 });
      if (isRoot()) chownSync(file, postgresUser().uid, postgresUser().gid);
    }
  }

  async start(): Promise<void> {
    if (this.destroyed) throw new Error(`Test cluster ${this.name} was destroyed`);
    if (this.running()) return;
    const log = path.join(this.dir, 'server.log');
    this.removeStaleLockFile();
    try {
      await run(
        asPostgresUser(path.join(this.bin, 'pg_ctl'), [
          '-D',
          this.dataDir,
          '-l',
          log,
          '-w',
          '-t',
          String(WAIT_SECONDS),
          'start',
        ]),
      );
    } catch (error) {
      const tail = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-5).join('\n') : '';
      throw new Error(
        `Test cluster ${this.name} did not start on port ${this.port}: ${(error as Error).message}\n${tail}`,
      );
    }
    this.postmaster = Number(readFileSync(path.join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  /**
   * After a kill the lock file names a postmaster that is dead but maybe not yet reaped by
   * init: PostgreSQL takes the zombie for a running server and refuses to start.
   */
  private removeStaleLockFile(): void {
    const lock = path.join(this.dataDir, 'postmaster.pid');
    if (!existsSync(lock)) return;
    const pid = Number(readFileSync(lock, 'utf8').split('\n')[0]);
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) rmSync(lock, { force: true });
  }

  async stop(): Promise<void> {
    if (!this.running()) return;
    const postmaster = this.postmaster as number;
    await run(
      asPostgresUser(path.join(this.bin, 'pg_ctl'), [
        '-D',
        this.dataDir,
        '-m',
        'fast',
        '-w',
        '-t',
        String(WAIT_SECONDS),
        'stop',
      ]),
    );
    await waitUntil(
      () => !processAlive(postmaster),
      WAIT_SECONDS * 1000,
      `${this.name}'s postmaster to exit`,
    );
    this.postmaster = undefined;
  }

  async kill(): Promise<void> {
    if (!this.running()) return;
    const postmaster = this.postmaster as number;
    const children = childrenOf(postmaster);
    process.kill(postmaster, 'SIGKILL');
    await waitUntil(() => !processAlive(postmaster), WAIT_SECONDS * 1000, `${this.name}'s postmaster to die`);
    // Orphaned backends notice the postmaster's death and exit by themselves; a new postmaster
    // refuses to start while any of them still holds the shared memory.
    try {
      await waitUntil(
        () => children.every((pid) => !processAlive(pid)),
        10_000,
        `${this.name}'s backends to exit`,
      );
    } catch {
      for (const pid of children) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
      await waitUntil(
        () => children.every((pid) => !processAlive(pid)),
        WAIT_SECONDS * 1000,
        `${this.name}'s backends to die`,
      );
    }
    this.postmaster = undefined;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async createDatabase(name: string): Promise<string> {
    await this.query(`CREATE DATABASE ${quoteIdent(name)}`);
    return this.urlFor(name);
  }

  async query<R extends QueryResultRow = QueryResultRow>(
    sql: string,
    params: unknown[] = [],
    database: string = DATABASE,
  ): Promise<R[]> {
    const client = new Client({ host: HOST, port: this.port, user: USER, database });
    await client.connect();
    try {
      return (await client.query<R>(sql, params)).rows;
    } finally {
      await client.end();
    }
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    try {
      await this.stop();
    } catch {
      await this.kill();
    }
    this.destroyed = true;
    rmSync(this.dir, { recursive: true, force: true });
    live.delete(this);
  }

  /** For the exit backstop: nothing asynchronous runs any more. */
  destroySync(): void {
    if (this.postmaster !== undefined && processAlive(this.postmaster)) {
      const children = childrenOf(this.postmaster);
      for (const pid of [this.postmaster, ...children]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

let exitHookInstalled = false;
/** A process that ends without afterAll (a crashed worker, a forced exit) leaves no server behind. */
function installExitBackstop(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const cluster of live) cluster.destroySync();
    live.clear();
  });
}

/** initdb and start one cluster; the caller destroys it (see useTestClusters for a test file). */
export async function startTestCluster(name: string, options: TestClusterOptions = {}): Promise<TestCluster> {
  const bin = postgresBinDir();
  const label = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 30);
  const dir = mkdtempSync(path.join(tmpdir(), `pipeline-test-cluster-${label}-`));
  if (isRoot()) chownSync(dir, postgresUser().uid, postgresUser().gid);
  const cluster = new ClusterProcess(
    name,
    dir,
    bin,
    options.maxConnections ?? 40,
    options.passwordLogins ?? false,
    options.tls,
  );
  installExitBackstop();
  live.add(cluster);
  try {
    await cluster.initialize();
  } catch (error) {
    await cluster.destroy().catch(() => cluster.destroySync());
    live.delete(cluster);
    throw error;
  }
  return cluster;
}

/** Clusters started through the returned object, all destroyed when it is asked to. */
export function testClusters(): TestClusters {
  const started: TestCluster[] = [];
  return {
    async start(name, options) {
      const cluster = await startTestCluster(name, options);
      started.push(cluster);
      return cluster;
    },
    async destroyAll() {
      const results = await Promise.allSettled(started.splice(0).map((cluster) => cluster.destroy()));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

type AfterAll = (fn: () => Promise<void>, timeout?: number) => void;

/**
 * For a test file (call at its top level or in a describe): clusters it starts are destroyed
 * when the file ends, passed or failed.
 */
export function useTestClusters(): TestClusters {
  const afterAll = (globalThis as { afterAll?: AfterAll }).afterAll;
  if (typeof afterAll !== 'function') throw new Error('useTestClusters needs a jest test file (afterAll)');
  const clusters = testClusters();
  afterAll(() => clusters.destroyAll(), (WAIT_SECONDS + 10) * 1000);
  return clusters;
}
