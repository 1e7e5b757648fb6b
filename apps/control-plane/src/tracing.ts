import { startTracing } from '@pipeline/telemetry';

/**
 * Started before main.ts loads anything else (this module is its first import), so that http,
 * express, pg and fetch are instrumented as they load. Off unless OTEL_* asks for it
 * (docs/operations.md, "Tracing").
 */
export const tracing = startTracing('control-plane');
