import { z } from 'zod';
import { envString, envUrl } from '@pipeline/config';

/**
 * The OpenTelemetry SDK's standard variables a service traces with. The SDK reads them from the
 * environment itself; they are declared so that manifests may set them and the configuration
 * reference lists them. All unset (or empty): tracing is off and nothing is started.
 */
export const tracingConfigSchema = z.object({
  OTEL_TRACES_EXPORTER: envString()
    .optional()
    .describe(
      'Tracing: where spans go, `otlp`, `console` or `none`. Unset with no OTLP endpoint: tracing is off (no SDK started).',
    ),
  OTEL_EXPORTER_OTLP_ENDPOINT: envUrl(['http', 'https'])
    .optional()
    .describe(
      'Tracing: the OTLP collector, e.g. `http://otel-collector:4318` (spans go to `/v1/traces`). Setting it turns tracing on.',
    ),
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(['http/protobuf', 'http/json', 'grpc'])
    .optional()
    .describe('Tracing: the OTLP protocol; unset: `http/protobuf` (port 4318; `grpc` is port 4317).'),
  OTEL_SERVICE_NAME: envString()
    .optional()
    .describe('Tracing: the service name on spans; unset: `control-plane`, `ingestion`, `delivery-<kind>`.'),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .optional()
    .describe(
      'Tracing: which traces are kept; unset: `parentbased_always_on` (all). `parentbased_traceidratio` keeps a share.',
    ),
  OTEL_TRACES_SAMPLER_ARG: envString()
    .optional()
    .describe('Tracing: the share of traces a `traceidratio` sampler keeps, 0 to 1.'),
  OTEL_RESOURCE_ATTRIBUTES: envString()
    .optional()
    .describe(
      'Tracing: attributes of every span, `key=value,...`, e.g. `deployment.environment.name=staging`.',
    ),
});
