/**
 * Runs a process's start-up. A failure before the service is up (database or broker
 * unreachable, port taken) ends the process with one readable line and exit code 1, which an
 * orchestrator sees and retries; no unhandled rejection, no stack dump.
 */
export function startService(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(
      `${name}: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  });
}
