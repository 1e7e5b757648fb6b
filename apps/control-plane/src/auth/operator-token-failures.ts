import type { RequestHandler } from 'express';
import { AppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import { ApiKeyFailureCounter, type ApiKeyFailureLimitOptions } from './api-key-failures';
import { presentsKey } from './bearer-token';
import { OPERATOR_TOKEN_FAILURES } from './failure-window';
import type { OperatorToken } from './operator-token';

/** The API keys' options; `perMinute` is OPERATOR_TOKEN_FAILURES_PER_MINUTE here. */
export type OperatorTokenFailureLimitOptions = ApiKeyFailureLimitOptions;

export const tooManyOperatorTokenFailures = (perMinute: number, retryAfter: number) =>
  new AppError(
    429,
    'too_many_failed_attempts',
    `This address presented more than ${perMinute} wrong operator tokens in a minute; retry in ${retryAfter} s`,
  );

/**
 * Throttles and logs guesses of OPERATOR_API_TOKEN on the operator listener, per client address
 * in one-minute windows (the API keys' failure counter, in counts of its own). Once an address
 * has presented `perMinute` wrong tokens, every request of it that presents one is 429
 * `too_many_failed_attempts` until the minute ends, the right token included: answering it
 * would tell a guesser which guess was right. Each wrong token is logged with its address,
 * never its value (a near-miss, or the real token sent to the wrong place, is still a secret).
 */
export function operatorTokenFailureLimit(
  operatorToken: OperatorToken,
  options: OperatorTokenFailureLimitOptions,
  logger: Logger,
  counter = new ApiKeyFailureCounter(options.redis, logger, Date.now, OPERATOR_TOKEN_FAILURES),
): RequestHandler {
  return (request, response, next) => {
    if (!presentsKey(request.headers.authorization)) {
      next();
      return;
    }
    const address = options.clientAddress(request) ?? 'unknown';
    counter
      .failures(address)
      .then(async (failures) => {
        if (failures >= options.perMinute) {
          const retryAfter = counter.retryAfter();
          response.setHeader('Retry-After', String(retryAfter));
          next(tooManyOperatorTokenFailures(options.perMinute, retryAfter));
          return;
        }
        if (!operatorToken.matches(request.headers.authorization)) {
          await counter.fail(address);
          logger.warn('operator token refused', {
            address,
            method: request.method,
            path: request.path,
            failuresThisMinute: failures + 1,
          });
        }
        next();
      })
      .catch(next);
  };
}
