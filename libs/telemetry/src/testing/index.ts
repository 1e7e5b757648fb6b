import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createInstrumentations, startTracing } from '../tracing';

export { SpanKind } from '@opentelemetry/api';
export type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

export interface TestTracing {
  /** The spans finished so far. */
  spans(): ReadableSpan[];
  /** Stops the SDK and unregisters it, so the next test file starts with the no-op API. */
  shutdown(): Promise<void>;
}

export interface TestTracingOptions {
  /**
   * The `pg` module the code under test uses. Jest loads modules through its own registry, past
   * the require hook the instrumentations patch with; pg's instrumentation is applied to this
   * copy (and http's to node:http) here. Fetch is seen through undici's diagnostics channels.
   */
  pg?: object;
}

/**
 * Tracing as the services start it (same instrumentations), into an in-memory exporter, each span
 * kept as it ends. Start it before the code under test loads node:http: a test file's first import.
 */
export function startTestTracing(serviceName: string, options: TestTracingOptions = {}): TestTracing {
  const exporter = new InMemorySpanExporter();
  const instrumentations = createInstrumentations();
  const tracing = startTracing(serviceName, {
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    instrumentations,
  });
  // Jest hands out node:http itself, but past the require hook: patch it as the hook would.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded: Record<string, object | undefined> = { http: require('node:http') as object, pg: options.pg };
  const patched: (() => void)[] = [];
  for (const instrumentation of instrumentations) {
    for (const definition of instrumentation.getModuleDefinitions()) {
      const exports = loaded[definition.name];
      if (!exports) continue;
      definition.patch?.(exports);
      patched.push(() => definition.unpatch?.(exports));
    }
  }
  return {
    spans: () => exporter.getFinishedSpans(),
    shutdown: async () => {
      await tracing.shutdown();
      // node:http is the worker's own, shared by the next test files.
      for (const unpatch of patched) unpatch();
      for (const instrumentation of instrumentations) instrumentation.disable();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
