import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';

const dist = path.join(__dirname, '../../dist');

/** Fails fast when the process tests run before the build they start. */
export function requireBuiltControlPlane(): void {
  if (!existsSync(path.join(dist, 'main.js'))) {
    throw new Error('build apps/control-plane first: pnpm exec nx build control-plane');
  }
}

/**
 * The built control plane (`dist/main.js`) as operators run it, listening on a random port
 * below Linux's ephemeral range (32768+), so no outgoing connection holds it. Resolves once
 * /health answers 200; the child is added to `started` so the suite can kill what is left.
 */
export async function startControlPlaneProcess(
  env: (port: number) => NodeJS.ProcessEnv,
  started: ChildProcess[],
): Promise<{ child: ChildProcess; base: string }> {
  const port = 20000 + Math.floor(Math.random() * 10000);
  const child = spawn(process.execPath, [path.join(dist, 'main.js')], {
    env: env(port),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push(child);
  const base = `http://127.0.0.1:${port}`;
  await until(
    async () =>
      (
        await request(base)
          .get('/health')
          .catch(() => null)
      )?.status === 200,
    10_000,
  );
  return { child, base };
}

export async function until(predicate: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
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
