import { propagation, ProxyTracerProvider, trace } from '@opentelemetry/api';
import { startTracing, tracingRequested } from './tracing';
import { withProcessSpan, withSendSpan } from './kafka-trace-context';

// Set when anything requires the SDK: with tracing off nothing may.
let mockSdkLoaded = false;
jest.mock('@opentelemetry/sdk-node', () => {
  mockSdkLoaded = true;
  return jest.requireActual('@opentelemetry/sdk-node');
});

describe('tracing is off unless OTEL_* asks for it', () => {
  it('reads the standard variables; empty ones count as unset', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'ingestion' })).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console,none' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(
      true,
    );
  });

  it('with no OTEL_* variables starts nothing: no SDK loaded, the no-op tracer, no spans, no headers', async () => {
    for (const env of [{}, { OTEL_SERVICE_NAME: 'ingestion', OTEL_TRACES_EXPORTER: '' }]) {
      const tracing = startTracing('ingestion', { env });
      expect(tracing.enabled).toBe(false);
      await tracing.shutdown();
    }
    expect(mockSdkLoaded).toBe(false);

    const provider = trace.getTracerProvider() as ProxyTracerProvider;
    expect(provider).toBeInstanceOf(ProxyTracerProvider);
    expect(provider.getDelegate().constructor.name).toBe('NoopTracerProvider');
    const span = trace.getTracer('test').startSpan('anything');
    expect(span.isRecording()).toBe(false);
    expect(propagation.fields()).toEqual([]);

    const headers = await withSendSpan('outbox', 1, async (traceHeaders) => {
      expect(trace.getActiveSpan()?.isRecording() ?? false).toBe(false);
      return traceHeaders;
    });
    expect(headers).toEqual({});
    await withProcessSpan({ topic: 'outbox', consumerGroup: 'g', records: [headers] }, async () => {
      expect(trace.getActiveSpan()?.spanContext().traceId ?? '').not.toMatch(/[1-9a-f]/);
    });
  });
});
