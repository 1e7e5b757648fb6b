import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { DailyUsageItem, UsageSummary } from './usage.dto';
import type { UsageService } from './usage.service';

/**
 * What the service spent for the account and what it costs. Days are UTC calendar days; the
 * period is the last `days` days ending today. Figures are what the metering job last stored
 * (every USAGE_METERING_INTERVAL_MS, 15 minutes by default; `meteredAt` says when): a request
 * never scans the warehouse.
 */
@Route('api/v1/usage')
@Tags('Usage')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
@Response<Problem, { 'Retry-After': string }>(
  503,
  "warehouse_unavailable: today's figures are not stored and the metering job's last attempt could not reach the account's warehouse (missing database, refused connection, failed authentication). Retry-After: seconds to wait",
)
export class UsageController extends Controller {
  constructor(private readonly usage: UsageService) {
    super();
  }

  /**
   * Storage, compute, query and sync-row figures and costs over the period.
   * @param days Days in the period: an integer, clamped to 1-365; 30 when absent.
   */
  @Get('summary')
  @Security('api_key', ['usage.read'])
  @Response<Problem>(400, 'days is not an integer')
  async getUsageSummary(
    @Request() request: ExpressRequest,
    @Query() days?: string,
  ): Promise<{ data: UsageSummary }> {
    return { data: await this.usage.summary(principalOf(request).accountId, days) };
  }

  /**
   * One item per UTC day of the period, oldest first, days without usage included (zeros).
   * @param days Days in the period: an integer, clamped to 1-365; 30 when absent.
   */
  @Get('daily')
  @Security('api_key', ['usage.read'])
  @Response<Problem>(400, 'days is not an integer')
  async getUsageDaily(
    @Request() request: ExpressRequest,
    @Query() days?: string,
  ): Promise<{ data: DailyUsageItem[] }> {
    return { data: await this.usage.daily(principalOf(request).accountId, days) };
  }
}
