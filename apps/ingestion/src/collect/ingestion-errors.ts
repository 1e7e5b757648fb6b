import { AppError } from '@pipeline/errors';

// Every error of docs/tracking-api.md#errors with its status, `error` code and extra fields. The error handler
// renders `{ ok: false, error, ...details }` and a Retry-After header when `retryAfter` is set.

export interface EventErrors {
  index: number;
  errors: { message: string }[];
}

export type LimitType = 'second' | 'day' | 'auth_resolution';

export const ingestionErrors = {
  invalidPayload: (message: string) =>
    new AppError(400, 'invalid_payload', message, { details: [{ message }] }),
  invalidBatch: (messages: string[]) =>
    new AppError(400, 'invalid_batch', messages.join('; '), {
      details: messages.map((message) => ({ message })),
    }),
  noValidEvents: (errors: EventErrors[]) =>
    new AppError(400, 'no_valid_events', 'No event passed validation', { details: errors }),
  missingWriteKey: () => new AppError(401, 'missing_write_key', 'No write key in header or body'),
  invalidWriteKey: () => new AppError(401, 'invalid_write_key', 'The write key does not match'),
  originNotAllowed: () =>
    new AppError(403, 'origin_not_allowed', 'The Origin is not allowed for this write key'),
  batchTooLarge: (size: number, limit: number) =>
    new AppError(413, 'batch_too_large', `A batch holds at most ${limit} events`, {
      details: [{ message: `received ${size} events; at most ${limit} are accepted` }],
    }),
  mergedBatchTooLarge: (messages: number, sharedBytes: number, limitBytes: number) =>
    new AppError(413, 'payload_too_large', 'The batch is too large once its context is merged', {
      details: [
        {
          message: `the batch's context and integrations (${sharedBytes} bytes) merged into its ${messages} messages come to more than ${limitBytes} bytes`,
        },
      ],
    }),
  payloadTooLarge: (limitBytes: number) =>
    new AppError(413, 'payload_too_large', 'The request body is too large', {
      details: [{ message: `at most ${limitBytes} bytes are accepted` }],
    }),
  rateLimited: (limitType: LimitType, retryAfter: number) =>
    new AppError(429, 'rate_limit_exceeded', `Over the ${limitType} rate limit`, { limitType, retryAfter }),
  authUnavailable: (retryAfter: number) =>
    new AppError(503, 'auth_unavailable', 'The write key cannot be checked now', { retryAfter }),
  durableIngressUnavailable: (reason: 'no_enabled_destination' | 'outbox_unavailable', retryAfter: number) =>
    new AppError(503, 'durable_ingress_unavailable', 'The batch was not committed', { reason, retryAfter }),
  deliveryUnavailable: (reason: 'no_destination_ready' | 'destination_incomplete', retryAfter: number) =>
    new AppError(503, 'delivery_unavailable', 'The batch was not delivered', { reason, retryAfter }),
};
