import path from 'node:path';
import { startTestTracing } from '@pipeline/telemetry/testing';

/**
 * Tracing into memory for a test file that imports this module first, as main.ts imports
 * ./tracing first: started before node:http and the rest load. The warehouse writer's pg (the
 * copy libs/destinations resolves) gets pg's instrumentation.
 */
export const testTracing = startTestTracing('ingestion-test', {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  pg: require(
    require.resolve('pg', { paths: [path.resolve(__dirname, '../../../../libs/destinations')] }),
  ) as object,
});
