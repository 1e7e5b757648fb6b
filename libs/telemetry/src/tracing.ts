import type { InstrumentationBase } from '@opentelemetry/instrumentation';
import type * as Express from '@opentelemetry/instrumentation-express';
import type * as Http from '@opentelemetry/instrumentation-http';
import type * as Pg from '@opentelemetry/instrumentation-pg';
import type * as Undici from '@opentelemetry/instrumentation-undici';
import type * as SdkNode from '@opentelemetry/sdk-node';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IncomingMessage } from 'node:http';

export interface Tracing {
  /** False when no OTEL_* variable asked for traces: nothing was started. */
  readonly enabled: boolean;
  /** Flushes the spans still buffered and stops the SDK; register it with the service's Shutdown. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** The environment to read OTEL_* from; process.env by default. */
  env?: NodeJS.ProcessEnv;
  /**
   * Tests: where spans go instead of the exporters OTEL_TRACES_EXPORTER names (an in-memory
   * exporter). Given, tracing starts whatever the environment says.
   */
  spanProcessors?: SpanProcessor[];
  /** Tests: the instrumentations (createInstrumentations's) to register. */
  instrumentations?: InstrumentationBase[];
}

const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/**
 * Whether the environment asks for traces: OTEL_TRACES_EXPORTER names an exporter other than
 * `none`, or an OTLP endpoint is given (the exporter is then OTLP). OTEL_SDK_DISABLED=true wins.
 * Empty values count as unset, so a manifest may list the variables with nothing in them.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (set(env.OTEL_TRACES_EXPORTER)) {
    const exporters = env.OTEL_TRACES_EXPORTER.split(',').map((name) => name.trim().toLowerCase());
    return exporters.some((name) => name !== '' && name !== 'none');
  }
  return set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

// Probes and scrapes would be most of a service's traces and tell nothing.
const UNTRACED_PATHS = new Set(['/health', '/livez', '/readyz', '/metrics']);
const untraced = (request: IncomingMessage) => UNTRACED_PATHS.has((request.url ?? '').split('?', 1)[0] ?? '');

/** The instrumentations a service runs with: node:http, express, pg and undici (fetch). */
export function createInstrumentations(): InstrumentationBase[] {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof Http;
  const { ExpressInstrumentation, ExpressLayerType } =
    require('@opentelemetry/instrumentation-express') as typeof Express;
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof Pg;
  const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici') as typeof Undici;
  /* eslint-enable @typescript-eslint/no-require-imports */
  return [
    new HttpInstrumentation({ ignoreIncomingRequestHook: untraced }),
    // The route template names the server span (POST /collect); middleware spans are noise.
    new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
    // Queries outside a traced operation (pollers, heartbeats) would each be a trace of one span.
    new PgInstrumentation({ requireParentSpan: true }),
    // Likewise calls outside one (the write-key cache's refreshes are inside the request).
    new UndiciInstrumentation({ requireParentforSpans: true }),
  ];
}

const off: Tracing = { enabled: false, shutdown: async () => undefined };

/**
 * Starts OpenTelemetry tracing for this process when the OTEL_* variables ask for it
 * (`tracingRequested`); otherwise starts nothing, loads none of the SDK and returns a no-op.
 *
 * Call it before anything else is loaded (each service's `src/tracing.ts`, the first import of
 * its main.ts): the instrumentations of http, express, pg and undici (fetch) patch those modules
 * as they are required. Exported through the SDK's own OTEL_* configuration (OTLP by default,
 * W3C trace context and baggage as propagators); `serviceName` unless OTEL_SERVICE_NAME says
 * otherwise. Only traces: metrics stay with prom-client and logs with the logger.
 */
export function startTracing(serviceName: string, options: TracingOptions = {}): Tracing {
  const env = options.env ?? process.env;
  if (!options.spanProcessors && !tracingRequested(env)) return off;
  // Loaded only when tracing is on: a service without OTEL_* pays nothing for the SDK.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const sdk = new NodeSDK({
    serviceName: set(env.OTEL_SERVICE_NAME) ? env.OTEL_SERVICE_NAME.trim() : serviceName,
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
    // Traces only: OTEL_METRICS_EXPORTER and OTEL_LOGS_EXPORTER would otherwise default to OTLP.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: options.instrumentations ?? createInstrumentations(),
  });
  sdk.start();
  let stopped: Promise<void> | undefined;
  return {
    enabled: true,
    shutdown: () => (stopped ??= sdk.shutdown()),
  };
}
