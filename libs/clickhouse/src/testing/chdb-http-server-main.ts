import { startChdbHttpServer } from './chdb-http-server';

// node dist/testing/chdb-http-server-main.js --port 0 --path DIR [--user U --password P]
//   [--exit-with-stdin]
// Prints one line, {"port":N}, once it listens. With --exit-with-stdin it exits when its
// standard input ends: a test process that spawned it and died takes it along.

function option(args: readonly string[], name: string): string | undefined {
  const index = args.indexOf(`--${name}`);
  return index === -1 ? undefined : args[index + 1];
}

async function main(args: readonly string[]): Promise<void> {
  const path = option(args, 'path');
  if (!path) throw new Error('--path DIR is required');
  const user = option(args, 'user');
  const password = option(args, 'password');
  const server = await startChdbHttpServer({
    path,
    port: Number(option(args, 'port') ?? 0),
    ...(user !== undefined ? { user } : {}),
    ...(password !== undefined ? { password } : {}),
  });
  let closing = false;
  const stop = (): void => {
    if (closing) return;
    closing = true;
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (args.includes('--exit-with-stdin')) {
    process.stdin.on('end', stop);
    process.stdin.on('close', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }
  process.stdout.write(`${JSON.stringify({ port: server.port })}\n`);
}

// From 1: run through `node -e`, the arguments start there.
main(process.argv.slice(1)).catch((error: unknown) => {
  process.stderr.write(`chdb-http-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
