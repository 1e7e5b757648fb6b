import { trace } from '@opentelemetry/api';

/**
 * Names the active HTTP server span after its route (`POST /collect`) and sets `http.route`,
 * for a request served outside express (whose instrumentation names its own routes). Without
 * tracing there is no active span and this does nothing.
 */
export function nameServerSpan(method: string, route: string): void {
  const span = trace.getActiveSpan();
  if (!span) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
}
