export { startTracing, tracingRequested, type Tracing, type TracingOptions } from './tracing';
export {
  recordSpanContext,
  traceHeadersOf,
  withProcessSpan,
  withSendSpan,
  type ProcessSpanOptions,
  type RecordHeaders,
} from './kafka-trace-context';
export { tracingConfigSchema } from './tracing-config';
export { nameServerSpan } from './http-route';
