import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Get,
  Path,
  Post,
  Query,
  Request,
  Response,
  Route,
  Security,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import { invalidField } from '../http/api-errors';
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import {
  quarantineStatuses,
  type QuarantineDiscardResult,
  type QuarantinedEventDetail,
  type QuarantinedEventView,
  type QuarantineReplayBody,
  type QuarantineReplayResult,
  type QuarantineSelectionBody,
  type QuarantineStatus,
} from './quarantine.dto';
import { quarantineFilterOf, type QuarantineService } from './quarantine.service';

/**
 * Events a tracking plan's policy kept out of a destination (docs/tracking-plans.md,
 * "Quarantine"). Nothing a plan refuses is lost: each is held with its violations, the plan
 * version it was held to and its original message id, until it is replayed after the plan or the
 * code was fixed, or discarded.
 */
@Route('api/v1/quarantine')
@Tags('Tracking plans')
@Response<Problem>(400, 'Invalid request: validation_failed (the field is named)')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class QuarantineController extends Controller {
  constructor(private readonly quarantine: QuarantineService) {
    super();
  }

  /**
   * Lists quarantined events, newest received first.
   * @param planId A plan id.
   * @param writeKeyId A write key id.
   * @param destination A delivery kind (`warehouse`, `amplitude`, ...).
   * @param destinationId A target: an integration id, or the kind.
   * @param code A violation code the event has (`missing_required`, ...).
   * @param name The event's name (track: the event; page and screen: the name).
   * @param status `quarantined` (default), `replayed` or `discarded`.
   * @param since Received at or after (ISO 8601).
   * @param until Received before (ISO 8601).
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['tracking_plans.read'])
  async listQuarantinedEvents(
    @Request() request: ExpressRequest,
    @Query() planId?: string,
    @Query() writeKeyId?: string,
    @Query() destination?: string,
    @Query() destinationId?: string,
    @Query() code?: string,
    @Query() name?: string,
    @Query() status?: string,
    @Query() since?: string,
    @Query() until?: string,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<QuarantinedEventView>> {
    if (status !== undefined && !(quarantineStatuses as readonly string[]).includes(status))
      throw invalidField('query.status', `must be one of ${quarantineStatuses.join(', ')}`);
    const filter = quarantineFilterOf(
      { planId, writeKeyId, destination, destinationId, code, name, since, until },
      'query',
    );
    return this.quarantine.list(
      principalOf(request).accountId,
      filter,
      (status as QuarantineStatus | undefined) ?? 'quarantined',
      pageRequest(limit, offset),
    );
  }

  /** One quarantined event, with the event as the door received it. */
  @Get('{quarantinedEventId}')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(404, 'quarantined_event_not_found: no such quarantined event in this account')
  async getQuarantinedEvent(
    @Request() request: ExpressRequest,
    @Path() quarantinedEventId: string,
  ): Promise<QuarantinedEventDetail> {
    return this.quarantine.get(principalOf(request).accountId, quarantinedEventId);
  }

  /**
   * Checks the selected quarantined events again against a published version of their plan
   * (`version`, or the latest) under the policy they were received with, and replays those that
   * now pass their destination's policy: put back in that destination's retry topic with their
   * original message ids, and marked `replayed` (a second replay adds nothing). The others stay
   * quarantined. At most 1000 events per call; replays count with the dead letters'
   * (DEAD_LETTER_REPLAYS_PER_MINUTE).
   */
  @Post('replay')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(
    400,
    'quarantine_selector_required: no ids and no filter; validation_failed (a version without planId, an unknown code, a time that is not ISO 8601)',
  )
  @Response<Problem>(
    404,
    'quarantined_event_not_found: an id is not one of this account’s; tracking_plan_version_not_found: no such version of the plan. Nothing was replayed',
  )
  // RateLimit headers too: the API key's limit sets them on every answer, this 429 included.
  @Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
    429,
    'dead_letter_replay_rate_limited: the account made more than DEAD_LETTER_REPLAYS_PER_MINUTE replays this minute; nothing was replayed. Retry-After: seconds to wait. (rate_limited: the API key rate limit, as on every route)',
  )
  @Response<Problem, { 'Retry-After': string }>(
    503,
    'dead_letters_unavailable: Kafka did not take the events; nothing was replayed. Retry-After: seconds to wait',
  )
  async replayQuarantinedEvents(
    @Request() request: ExpressRequest,
    @Body() body: QuarantineReplayBody,
  ): Promise<QuarantineReplayResult> {
    return this.quarantine.replay(principalOf(request).accountId, body);
  }

  /** Marks the selected quarantined events `discarded`: no replay takes them. At most 1000 per call. */
  @Post('discard')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(400, 'quarantine_selector_required: no ids and no filter; validation_failed')
  @Response<Problem>(
    404,
    'quarantined_event_not_found: an id is not one of this account’s; nothing was discarded',
  )
  async discardQuarantinedEvents(
    @Request() request: ExpressRequest,
    @Body() body: QuarantineSelectionBody,
  ): Promise<QuarantineDiscardResult> {
    return this.quarantine.discard(principalOf(request).accountId, body);
  }
}
