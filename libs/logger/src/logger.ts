import { isSpanContextValid, trace } from '@opentelemetry/api';
import winston from 'winston';
import { currentRequestId } from './request-context';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  service: string;
  level?: LogLevel;
  format?: LogFormat;
  /** Where lines go; standard output by default. Tests pass a stream to read them back. */
  stream?: NodeJS.WritableStream;
}

export type Logger = winston.Logger;

// Field names whose values are secrets wherever they appear in a log line's metadata.
const secretField =
  /^(authorization|cookie|set-cookie|password|secret|token|api[_-]?key|write[_-]?key|credentials|x-write-key|x-admin-token|client[_-]?secret)$/i;
const REDACTED = '[redacted]';

function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] = secretField.test(key) ? REDACTED : redactSecrets(inner, depth + 1);
  }
  return out;
}

const redaction = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === 'level' || key === 'message') continue;
    info[key] = secretField.test(key) ? REDACTED : redactSecrets(info[key]);
  }
  return info;
});

const requestId = winston.format((info) => {
  const id = currentRequestId();
  if (id !== undefined && info.requestId === undefined) info.requestId = id;
  return info;
});

/**
 * Inside a traced operation (a request, a Kafka batch's handling) the active span's ids, to find
 * the trace of a log line. With tracing off no span is ever active and nothing is added.
 */
const traceIds = winston.format((info) => {
  const span = trace.getActiveSpan()?.spanContext();
  if (span && isSpanContextValid(span)) {
    info.trace_id = span.traceId;
    info.span_id = span.spanId;
  }
  return info;
});

/**
 * A JSON logger: one object per line with timestamp, level, service, message and, inside a
 * request, its requestId; with tracing on, inside a traced operation, trace_id and span_id. `pretty` is for a developer's terminal only.
 */
export function createLogger(options: LoggerOptions): Logger {
  const base = [
    winston.format.timestamp(),
    requestId(),
    traceIds(),
    redaction(),
    winston.format.errors({ stack: true }),
  ];
  const format =
    options.format === 'pretty'
      ? winston.format.combine(
          ...base,
          winston.format.colorize(),
          winston.format.printf(({ timestamp, level, message, service, requestId: rid, ...rest }) => {
            const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
            return `${String(timestamp)} ${String(service)} ${level}${rid ? ` [${String(rid)}]` : ''} ${String(message)}${extra}`;
          }),
        )
      : winston.format.combine(...base, winston.format.json());
  const transport = options.stream
    ? new winston.transports.Stream({ stream: options.stream })
    : new winston.transports.Console();
  return winston.createLogger({
    level: options.level ?? 'info',
    defaultMeta: { service: options.service },
    format,
    transports: [transport],
  });
}
