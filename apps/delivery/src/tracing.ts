import { startTracing } from '@pipeline/telemetry';

/** `--destination <kind>` as given; main.ts's parser checks it, this only names the service. */
export function destinationArgument(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === '--destination' || arg === '-d') return argv[i + 1];
    if (arg.startsWith('--destination=')) return arg.slice('--destination='.length);
  }
  return undefined;
}

/**
 * Started before main.ts loads anything else (this module is its first import), so that http,
 * pg and fetch are instrumented as they load. Off unless OTEL_* asks for it (docs/operations.md,
 * "Tracing"). The service is named like the logs': delivery-<kind>.
 */
export const tracing = startTracing(`delivery-${destinationArgument(process.argv.slice(2)) ?? 'unknown'}`);
