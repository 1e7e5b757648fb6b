import type { AppError } from '@pipeline/errors';
import { ingestionErrors } from './ingestion-errors';

// The documented errors (docs/tracking-api.md#errors): a client acts on the status and code
// (an SDK retries 429 and 503 after Retry-After, drops other 4xx), so each is checked by value.

const fields = (error: AppError) => ({
  status: error.status,
  code: error.code,
  message: error.message,
  details: error.details,
});

describe('ingestionErrors', () => {
  it('refuses what is not a request with 400 and what was wrong', () => {
    expect(fields(ingestionErrors.invalidPayload('body is missing'))).toEqual({
      status: 400,
      code: 'invalid_payload',
      message: 'body is missing',
      details: { details: [{ message: 'body is missing' }] },
    });
    expect(fields(ingestionErrors.invalidBatch(['a', 'b']))).toEqual({
      status: 400,
      code: 'invalid_batch',
      message: 'a; b',
      details: { details: [{ message: 'a' }, { message: 'b' }] },
    });
    const errors = [{ index: 0, errors: [{ message: 'type is required' }] }];
    expect(fields(ingestionErrors.noValidEvents(errors))).toEqual({
      status: 400,
      code: 'no_valid_events',
      message: 'No event passed validation',
      details: { details: errors },
    });
  });

  it('refuses a missing or wrong key with 401 and a foreign origin with 403', () => {
    expect(fields(ingestionErrors.missingWriteKey())).toEqual({
      status: 401,
      code: 'missing_write_key',
      message: 'No write key in header or body',
      details: undefined,
    });
    expect(fields(ingestionErrors.invalidWriteKey())).toEqual({
      status: 401,
      code: 'invalid_write_key',
      message: 'The write key does not match',
      details: undefined,
    });
    expect(fields(ingestionErrors.originNotAllowed())).toEqual({
      status: 403,
      code: 'origin_not_allowed',
      message: 'The Origin is not allowed for this write key',
      details: undefined,
    });
  });

  it('refuses what is too large with 413, saying the limit', () => {
    expect(fields(ingestionErrors.batchTooLarge(101, 100))).toEqual({
      status: 413,
      code: 'batch_too_large',
      message: 'A batch holds at most 100 events',
      details: { details: [{ message: 'received 101 events; at most 100 are accepted' }] },
    });
    expect(fields(ingestionErrors.mergedBatchTooLarge(3, 1000, 2000))).toEqual({
      status: 413,
      code: 'payload_too_large',
      message: 'The batch is too large once its context is merged',
      details: {
        details: [
          {
            message:
              "the batch's context and integrations (1000 bytes) merged into its 3 messages come to more than 2000 bytes",
          },
        ],
      },
    });
    expect(fields(ingestionErrors.payloadTooLarge(2048))).toEqual({
      status: 413,
      code: 'payload_too_large',
      message: 'The request body is too large',
      details: { details: [{ message: 'at most 2048 bytes are accepted' }] },
    });
  });

  it('answers a limit with 429, which limit and when to retry', () => {
    expect(fields(ingestionErrors.rateLimited('day', 3600))).toEqual({
      status: 429,
      code: 'rate_limit_exceeded',
      message: 'Over the day rate limit',
      details: { limitType: 'day', retryAfter: 3600 },
    });
  });

  it('answers what cannot be done now with 503, why and when to retry', () => {
    expect(fields(ingestionErrors.authUnavailable(5))).toEqual({
      status: 503,
      code: 'auth_unavailable',
      message: 'The write key cannot be checked now',
      details: { retryAfter: 5 },
    });
    expect(fields(ingestionErrors.durableIngressUnavailable('outbox_unavailable', 5))).toEqual({
      status: 503,
      code: 'durable_ingress_unavailable',
      message: 'The batch was not committed',
      details: { reason: 'outbox_unavailable', retryAfter: 5 },
    });
    expect(fields(ingestionErrors.deliveryUnavailable('no_destination_ready', 7))).toEqual({
      status: 503,
      code: 'delivery_unavailable',
      message: 'The batch was not delivered',
      details: { reason: 'no_destination_ready', retryAfter: 7 },
    });
  });
});
