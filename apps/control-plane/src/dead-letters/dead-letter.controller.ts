import type { Request as ExpressRequest } from 'express';
import { Body, Controller, Get, Post, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import type { DeadLetterStatus } from './dead-letter.entity';
import {
  parseDeadLetterFilter,
  parseDeadLetterSelection,
  parseDeadLetterStatus,
} from './dead-letter-selector';
import type {
  DeadLetterDiscardResult,
  DeadLetterReplayResult,
  DeadLetterSelectionBody,
  DeadLetterView,
} from './dead-letter.dto';
import type { DeadLetterService } from './dead-letter.service';

/**
 * The account's dead letters: records a destination could not take (a permanent refusal, or
 * attempts run out), indexed from the delivery consumers' dead-letter topics within seconds.
 * Replay puts them back for delivery, once per pending record; discard sets them aside.
 */
@Route('api/v1/dead-letters')
@Tags('Dead letters')
@Response<Problem>(400, 'Invalid request: validation_failed (the field is named), invalid_time_range')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class DeadLettersController extends Controller {
  constructor(private readonly deadLetters: DeadLetterService) {
    super();
  }

  /**
   * Lists the account's dead letters, last seen first.
   * @param destination A delivery kind (`warehouse`, `amplitude`, `webhook`, ...).
   * @param destinationId A target: an integration id, `warehouse:<id>`, or the kind.
   * @param reasonCode `attempts_exhausted`, `http_400`, `data_error`, ...
   * @param status `pending` (default), `replayed` or `discarded`.
   * @param since Last seen at or after (ISO 8601).
   * @param until Last seen before (ISO 8601).
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['dead_letters.read'])
  async listDeadLetters(
    @Request() request: ExpressRequest,
    @Query() destination?: string,
    @Query() destinationId?: string,
    @Query() reasonCode?: string,
    @Query() status?: DeadLetterStatus,
    @Query() since?: string,
    @Query() until?: string,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<DeadLetterView>> {
    const filter = parseDeadLetterFilter({ destination, destinationId, reasonCode, since, until }, 'query');
    return this.deadLetters.list(
      principalOf(request).accountId,
      filter,
      parseDeadLetterStatus(status),
      pageRequest(limit, offset),
    );
  }

  /**
   * Puts the selected `pending` dead letters back in their destination's retry topic, due now
   * with fresh attempts, and marks them `replayed`: a second replay of the same ones replays
   * nothing (`skipped`), so replaying twice delivers once. At most 1000 per call, sent and
   * marked in pages of 50 (or 5 MB); an account may replay DEAD_LETTER_REPLAYS_PER_MINUTE times
   * a minute, and the events replayed count against their write key's event limits.
   */
  @Post('replay')
  @Security('api_key', ['dead_letters.replay'])
  // RateLimit headers too: the API key's limit sets them on every answer, this 429 included.
  @Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
    429,
    'dead_letter_replay_rate_limited: the account made more than DEAD_LETTER_REPLAYS_PER_MINUTE replays this minute; nothing was replayed. Retry-After: seconds to wait. (rate_limited: the API key rate limit, as on every route)',
  )
  @Response<Problem>(
    400,
    'dead_letter_selector_required: no ids and no filter; validation_failed; invalid_time_range',
  )
  @Response<Problem>(
    404,
    'dead_letter_not_found: an id is not a dead letter of this account; nothing was replayed',
  )
  @Response<Problem, { 'Retry-After': string }>(
    503,
    'dead_letters_unavailable: Kafka did not take the records; those of earlier pages stay replayed (the detail counts them, usually none), the others stay pending. Retry-After: seconds to wait',
  )
  async replayDeadLetters(
    @Request() request: ExpressRequest,
    @Body() body: DeadLetterSelectionBody,
  ): Promise<DeadLetterReplayResult> {
    return this.deadLetters.replay(principalOf(request).accountId, parseDeadLetterSelection(body));
  }

  /** Marks the selected `pending` dead letters `discarded`: no replay takes them. At most 1000 per call. */
  @Post('discard')
  @Security('api_key', ['dead_letters.discard'])
  @Response<Problem>(
    400,
    'dead_letter_selector_required: no ids and no filter; validation_failed; invalid_time_range',
  )
  @Response<Problem>(
    404,
    'dead_letter_not_found: an id is not a dead letter of this account; nothing was discarded',
  )
  async discardDeadLetters(
    @Request() request: ExpressRequest,
    @Body() body: DeadLetterSelectionBody,
  ): Promise<DeadLetterDiscardResult> {
    return this.deadLetters.discard(principalOf(request).accountId, parseDeadLetterSelection(body));
  }
}
