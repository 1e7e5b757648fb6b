import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { DebugEvent, DebugEventStatus, DeliveryOutcomeView } from './debugger.dto';
import type { DebuggerService } from './debugger.service';

/** The live event debugger: what ingestion received for a write key, and where each event went. */
@Route('api/v1/write-keys')
@Tags('Event debugger')
@Response<Problem>(400, 'validation_failed: a filter is not valid')
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
@Response<Problem>(404, 'not_found: no such write key in this account')
@Response<Problem>(503, 'debugger_unavailable: the control plane has no Redis (REDIS_URL) or cannot reach it')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
export class DebuggerController extends Controller {
  constructor(private readonly debuggerService: DebuggerService) {
    super();
  }

  /**
   * The write key's recent events as ingestion received them (`/collect` and Segment's routes),
   * newest first: accepted and rejected alike, each rejected one with its errors. A request
   * whose body could not be read is one item with `type: null` and the request's error.
   * Ingestion keeps about the last 500 events per key for 24 hours and records at most 50
   * events per second per key and instance (docs/tracking-api.md, "Debugger").
   *
   * Live: `GET /api/v1/write-keys/{writeKeyId}/events/stream` (same scope, same
   * `Authorization: Bearer` header; not in this document, as it is not JSON) answers
   * `text/event-stream`: each new event as `id: <id>`, `event: debug-event`, `data: <DebugEvent JSON>`,
   * and a `: keep-alive` comment every 15 s. It resumes after the `Last-Event-ID` header's
   * event. At most 5 streams per API key at once (429 `too_many_streams`). Once the API key is
   * revoked the stream sends the comment `: end invalid_api_key` and ends (a reconnect is 401).
   * @param type Only events of this type (track, page, identify, group, alias, screen).
   * @param event Only track events of this name.
   * @param status Only accepted or only rejected events.
   * @param violations `true`: only events with at least one tracking-plan violation, or whose plan could not be read (`plan.version` null); `false` or absent: all.
   * @param limit Items, 1-100 (default 50).
   * @isInt limit
   */
  @Get('{writeKeyId}/events')
  @Security('api_key', ['write_keys.read'])
  async listDebugEvents(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
    @Query() type?: string,
    @Query() event?: string,
    @Query() status?: DebugEventStatus,
    @Query() violations?: boolean,
    @Query() limit?: number,
  ): Promise<{ data: DebugEvent[] }> {
    const data = await this.debuggerService.events(principalOf(request).accountId, writeKeyId, {
      ...(type !== undefined ? { type } : {}),
      ...(event !== undefined ? { event } : {}),
      ...(status !== undefined ? { status } : {}),
      ...(violations !== undefined ? { violations } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
    return { data };
  }

  /**
   * Where an event went, oldest first: `stored` (warehouse), `delivered`, `consent_skipped` or
   * `skipped` (with the vendor's reason) per forwarding destination and integration, `retried`
   * and `dead_lettered` (with the reason), `quarantined` (kept out by the tracking plan's policy;
   * the reason lists the violation codes). A stored or delivered event whose values the policy
   * stripped lists them in `omitted` (JSON Pointers). The consumers keep about the last 5000 outcomes per
   * write key for 24 hours, at most 50 per second per key and consumer; an empty list means
   * none is known (not delivered yet, or not recorded).
   */
  @Get('{writeKeyId}/events/{messageId}/deliveries')
  @Security('api_key', ['write_keys.read'])
  async listDebugEventDeliveries(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
    @Path() messageId: string,
  ): Promise<{ data: DeliveryOutcomeView[] }> {
    const data = await this.debuggerService.deliveries(principalOf(request).accountId, writeKeyId, messageId);
    return { data };
  }
}
