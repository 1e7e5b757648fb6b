import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
  type SpanContext,
  type TextMapGetter,
} from '@opentelemetry/api';

/** Kafka record headers as kafkajs gives and takes them. */
export type RecordHeaders = Record<string, Buffer | string | (Buffer | string)[] | undefined>;

const TRACER = '@pipeline/telemetry';

const headerGetter: TextMapGetter<RecordHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    const first = Array.isArray(value) ? value[0] : value;
    return first === undefined ? undefined : first.toString();
  },
};

function failed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : undefined });
}

async function inSpan<T>(span: Span, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Runs `send` inside a PRODUCER span `send <topic>` (a child of the active span, the HTTP
 * request's) and hands it the headers that carry this span's trace context (W3C `traceparent`,
 * `tracestate`) for every record it sends. With tracing off the headers are empty.
 */
export function withSendSpan<T>(
  topic: string,
  messageCount: number,
  send: (traceHeaders: Record<string, string>) => Promise<T>,
): Promise<T> {
  return trace.getTracer(TRACER).startActiveSpan(
    `send ${topic}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': topic,
        'messaging.batch.message_count': messageCount,
      },
    },
    (span) => {
      const headers: Record<string, string> = {};
      propagation.inject(context.active(), headers);
      return inSpan(span, () => send(headers));
    },
  );
}

/** The trace context a record carries in its headers, when it carries one. */
export function recordSpanContext(headers: RecordHeaders): SpanContext | undefined {
  const found = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers, headerGetter));
  return found && isSpanContextValid(found) ? found : undefined;
}

/** The trace-context headers of a record, to copy onto a record derived from it (a retry). */
export function traceHeadersOf(headers: RecordHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of propagation.fields()) {
    const value = headerGetter.get(headers, field);
    if (typeof value === 'string') out[field] = value;
  }
  return out;
}

export interface ProcessSpanOptions {
  topic: string;
  consumerGroup: string;
  /** The batch's records' headers, in order. */
  records: readonly RecordHeaders[];
  attributes?: Attributes;
}

/**
 * Runs the handling of a batch of records inside a CONSUMER span `process <topic>`. The span
 * is a child of the first record's trace context (so the trace that began at POST /collect
 * goes on into the delivery: the warehouse insert, the vendor calls) and links to every other
 * record's context, the messaging convention for a batch. Records that carry no context add
 * nothing; a batch with none starts a new trace.
 */
export function withProcessSpan<T>(options: ProcessSpanOptions, run: () => Promise<T>): Promise<T> {
  const contexts: SpanContext[] = [];
  const seen = new Set<string>();
  for (const headers of options.records) {
    const found = recordSpanContext(headers);
    if (!found || seen.has(found.spanId)) continue;
    seen.add(found.spanId);
    contexts.push(found);
  }
  const [first, ...others] = contexts;
  const parent = first ? trace.setSpanContext(ROOT_CONTEXT, first) : ROOT_CONTEXT;
  const links: Link[] = others.map((linked) => ({ context: linked }));
  return trace.getTracer(TRACER).startActiveSpan(
    `process ${options.topic}`,
    {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.name': options.topic,
        'messaging.consumer.group.name': options.consumerGroup,
        'messaging.batch.message_count': options.records.length,
        ...options.attributes,
      },
    },
    parent,
    (span) => inSpan(span, run),
  );
}
