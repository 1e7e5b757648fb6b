import { SpanKind, trace } from '@opentelemetry/api';
import { startTestTracing } from './testing';
import { traceHeadersOf, withProcessSpan, withSendSpan } from './kafka-trace-context';

const tracing = startTestTracing('kafka-trace-context-test');
afterAll(() => tracing.shutdown());

describe('trace context in Kafka record headers', () => {
  it('a send span writes its context into the records; a batch is processed in its first record’s trace and links to the others', async () => {
    const send = (n: number) =>
      withSendSpan('outbox', n, async (headers) => ({
        headers,
        span: trace.getActiveSpan()!.spanContext(),
      }));
    const first = await send(2);
    const second = await send(1);
    expect(first.headers).toEqual({
      traceparent: `00-${first.span.traceId}-${first.span.spanId}-01`,
    });
    expect(second.span.traceId).not.toBe(first.span.traceId);

    // Buffers, as kafkajs hands headers to a consumer; the first record twice (two events).
    const asRecord = (headers: Record<string, string>) =>
      Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)]));
    const records = [asRecord(first.headers), asRecord(first.headers), {}, asRecord(second.headers)];
    let inside: string | undefined;
    await withProcessSpan({ topic: 'outbox', consumerGroup: 'delivery.warehouse', records }, async () => {
      inside = trace.getActiveSpan()?.spanContext().spanId;
    });

    const spans = tracing.spans();
    const process = spans.find((s) => s.kind === SpanKind.CONSUMER)!;
    expect(process.name).toBe('process outbox');
    expect(process.spanContext().spanId).toBe(inside);
    expect(process.spanContext().traceId).toBe(first.span.traceId);
    expect(process.parentSpanContext?.spanId).toBe(first.span.spanId);
    expect(process.links.map((l) => l.context.spanId)).toEqual([second.span.spanId]);
    expect(process.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': 'outbox',
      'messaging.consumer.group.name': 'delivery.warehouse',
      'messaging.batch.message_count': 4,
    });
    expect(spans.filter((s) => s.kind === SpanKind.PRODUCER).map((s) => s.name)).toEqual([
      'send outbox',
      'send outbox',
    ]);

    // A retry record keeps the trace of the record it came from.
    expect(traceHeadersOf(records[0]!)).toEqual(first.headers);
    expect(traceHeadersOf({})).toEqual({});
  });

  it('a failed send or handling marks its span as an error', async () => {
    await expect(withSendSpan('outbox', 1, () => Promise.reject(new Error('broker away')))).rejects.toThrow(
      'broker away',
    );
    const failed = tracing.spans().at(-1)!;
    expect(failed.status).toMatchObject({ code: 2, message: 'broker away' });
    expect(failed.events.map((e) => e.name)).toEqual(['exception']);
  });
});
