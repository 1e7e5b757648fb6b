import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';

// A ClickHouse server for tests: chdb-http-server in a child process of its own (libchdb binds
// one data directory per process), on a free port of 127.0.0.1, its data in a fresh directory
// under the system temp dir. The child reads its standard input from a pipe and exits when the
// pipe ends, so a test process that dies takes its servers along.

const HOST = '127.0.0.1';
/** How long a start (chdb opens its data directory) or a stop may take. */
const WAIT_MS = 30_000;

export interface ClickHouseTestServerOptions {
  /** Require this user and password; `default` with no password when absent. */
  user?: string;
  password?: string;
  /** The data directory; a new one under the temp dir (deleted by destroy) when absent. */
  path?: string;
}

/** One ClickHouse test server. */
export interface ClickHouseTestServer {
  readonly host: string;
  /** Kept across stop/kill/restart when the port is still free. */
  readonly port: number;
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly user: string;
  readonly password: string;
  readonly dataDir: string;
  /** SIGTERM, then waits for the process to exit. */
  stop(): Promise<void>;
  /** SIGKILL (a crash); the process is gone soon after, its port refuses connections. */
  kill(): void;
  /** Stops a running server, then starts it on the same data directory and port. */
  restart(): Promise<void>;
  /** Stops the server and deletes a data directory this helper created. Idempotent. */
  destroy(): Promise<void>;
}

/** The entry script and how to run it: the built one, or the source through swc under jest. */
function entryCommand(): string[] {
  const built = path.join(__dirname, 'chdb-http-server-main.js');
  if (existsSync(built)) return [built];
  const source = path.join(__dirname, 'chdb-http-server-main.ts');
  const register = [
    "const swc = require('@swc/core');",
    "const fs = require('node:fs');",
    "require.extensions['.ts'] = (module, file) => module._compile(swc.transformSync(",
    "fs.readFileSync(file, 'utf8'), { filename: file, module: { type: 'commonjs' },",
    "jsc: { parser: { syntax: 'typescript' }, target: 'es2022' } }).code, file);",
    `require(${JSON.stringify(source)});`,
  ].join('\n');
  return ['-e', register, '--'];
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: HOST, port, path: '/ping', timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

class ServerProcess implements ClickHouseTestServer {
  readonly host = HOST;
  port = 0;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly dataDir: string,
    private readonly ownsDataDir: boolean,
    readonly user: string,
    readonly password: string,
    private readonly requireLogin: boolean,
  ) {}

  get url(): string {
    return `http://${HOST}:${this.port}`;
  }

  async start(port: number): Promise<void> {
    const args = [...entryCommand(), '--port', String(port), '--path', path.join(this.dataDir, 'data')];
    if (this.requireLogin) args.push('--user', this.user, '--password', this.password);
    args.push('--exit-with-stdin');
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], cwd: __dirname });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = `${stderr}${chunk.toString()}`.slice(-4000);
    });
    const listening = await new Promise<number>((resolve, reject) => {
      let stdout = '';
      const timer = setTimeout(() => fail(new Error(`no {"port":N} line within ${WAIT_MS} ms`)), WAIT_MS);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(`ClickHouse test server did not start: ${error.message}\n${stderr.trim()}`));
      };
      const onExit = (code: number | null): void => fail(new Error(`exited with ${code}`));
      child.once('exit', onExit);
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n').find((l) => l.startsWith('{'));
        if (!line) return;
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve((JSON.parse(line) as { port: number }).port);
      });
    });
    this.port = listening;
    const deadline = Date.now() + WAIT_MS;
    while (!(await ping(this.port))) {
      if (Date.now() > deadline)
        throw new Error(`ClickHouse test server on ${this.port} does not answer /ping`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    if (!this.running()) return;
    const child = this.child as ChildProcess;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), WAIT_MS);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.running()) this.child?.kill('SIGKILL');
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.exited;
    const port = this.port;
    // The port may take a moment to be free after the process exits; a few tries, bounded.
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      try {
        await this.start(port);
        return;
      } catch (error) {
        if (Date.now() > deadline || !/EADDRINUSE/.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  async destroy(): Promise<void> {
    await this.stop();
    live.delete(this);
    if (this.ownsDataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  destroySync(): void {
    this.child?.kill('SIGKILL');
    if (this.ownsDataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}

const live = new Set<ServerProcess>();
let exitHookInstalled = false;
/** A process that ends without afterAll leaves no server behind (stdin's end is the other guard). */
function installExitBackstop(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const server of live) server.destroySync();
    live.clear();
  });
}

/** Starts one server; the caller destroys it (see useClickHouseTestServer for a test file). */
export async function startClickHouseTestServer(
  options: ClickHouseTestServerOptions = {},
): Promise<ClickHouseTestServer> {
  const ownsDataDir = options.path === undefined;
  const dataDir = options.path ?? mkdtempSync(path.join(tmpdir(), 'pipeline-clickhouse-test-'));
  const requireLogin = options.user !== undefined || options.password !== undefined;
  const server = new ServerProcess(
    dataDir,
    ownsDataDir,
    options.user ?? 'default',
    options.password ?? '',
    requireLogin,
  );
  installExitBackstop();
  live.add(server);
  try {
    await server.start(0);
  } catch (error) {
    await server.destroy().catch(() => server.destroySync());
    throw error;
  }
  return server;
}

type Hook = (fn: () => Promise<void>, timeout?: number) => void;

/**
 * For a test file (call at its top level or in a describe): a server started in beforeAll and
 * destroyed in afterAll, passed or failed. Read `.current` inside tests.
 */
export function useClickHouseTestServer(options: ClickHouseTestServerOptions = {}): {
  readonly current: ClickHouseTestServer;
} {
  const hooks = globalThis as { beforeAll?: Hook; afterAll?: Hook };
  if (typeof hooks.beforeAll !== 'function' || typeof hooks.afterAll !== 'function')
    throw new Error('useClickHouseTestServer needs a jest test file (beforeAll/afterAll)');
  let server: ClickHouseTestServer | undefined;
  hooks.beforeAll(async () => {
    server = await startClickHouseTestServer(options);
  }, WAIT_MS + 10_000);
  hooks.afterAll(async () => {
    await server?.destroy();
  }, WAIT_MS + 10_000);
  return {
    get current(): ClickHouseTestServer {
      if (!server) throw new Error('the ClickHouse test server starts in beforeAll');
      return server;
    },
  };
}
