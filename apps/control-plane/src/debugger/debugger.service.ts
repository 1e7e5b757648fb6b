import { AppError } from '@pipeline/errors';
import { parseJsonText } from '@pipeline/events';
import { debuggerKeys, type RedisClient } from '@pipeline/redis';
import { invalidField } from '../http/api-errors';
import type { WriteKeyService } from '../write-keys/write-key.service';
import type { DebugEvent, DebugEventStatus, DeliveryOutcomeView } from './debugger.dto';

export const debuggerUnavailable = () =>
  new AppError(
    503,
    'debugger_unavailable',
    'The event debugger needs Redis (REDIS_URL), which is not available',
  );

export interface DebugEventFilters {
  type?: string;
  event?: string;
  status?: DebugEventStatus;
  /** Only events with a tracking-plan violation, or whose plan could not be read. */
  violations?: boolean;
  limit?: number;
}

/** Whether the event has something to look at under its tracking plan: a violation, or no verdict. */
export const hasPlanFindings = (event: DebugEvent): boolean =>
  event.plan !== undefined && (event.plan.version === null || (event.violations?.length ?? 0) > 0);

/** Entries read per XREVRANGE page, and at most in all (the streams are capped near 500). */
/** The event types of /collect and Segment's API (libs/events). */
const eventTypes = ['track', 'page', 'identify', 'group', 'alias', 'screen'] as const;

const PAGE = 200;
const MAX_SCANNED_EVENTS = 5_000;
const MAX_SCANNED_OUTCOMES = 50_000;

type StreamEntry = [id: string, fields: string[]];

const fieldOf = (fields: readonly string[], name: string): string | undefined => {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
};

/** A stream entry as the API shows it; undefined for an entry that is not one of ours. */
export function toDebugEvent([id, fields]: StreamEntry): DebugEvent | undefined {
  try {
    const record = parseJsonText(fieldOf(fields, 'd') ?? '') as Omit<DebugEvent, 'id'>;
    return { id, ...record };
  } catch {
    return undefined;
  }
}

/** The next id below `id` for an exclusive XREVRANGE end. */
const exclusiveBelow = (id: string) => `(${id}`;

/**
 * The live debugger's reads (docs/management-api.md, "Debugger"): a write key's recent events
 * from its capped stream, filtered, and a message's delivery outcomes. The write key must be
 * the caller's account's (404 otherwise); without Redis, 503 `debugger_unavailable`.
 */
export class DebuggerService {
  constructor(
    private readonly writeKeys: WriteKeyService,
    /** Null: REDIS_URL unset. */
    private readonly redis: RedisClient | null,
  ) {}

  get available(): boolean {
    return this.redis !== null;
  }

  /** The write key's id once it is known to be the account's (404 not_found otherwise). */
  async writeKeyOf(accountId: string, writeKeyId: string): Promise<string> {
    return (await this.writeKeys.get(accountId, writeKeyId)).id;
  }

  private client(): RedisClient {
    if (!this.redis) throw debuggerUnavailable();
    return this.redis;
  }

  async events(accountId: string, writeKeyId: string, filters: DebugEventFilters): Promise<DebugEvent[]> {
    const limit = filters.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw invalidField('limit', 'must be a whole number from 1 to 100');
    if (filters.type !== undefined && !(eventTypes as readonly string[]).includes(filters.type))
      throw invalidField('type', `must be one of ${eventTypes.join(', ')}`);
    const redis = this.client();
    const id = await this.writeKeyOf(accountId, writeKeyId);
    const key = debuggerKeys.events(id);
    const found: DebugEvent[] = [];
    let end = '+';
    for (let scanned = 0; scanned < MAX_SCANNED_EVENTS && found.length < limit;) {
      const page = (await redis.xrevrange(key, end, '-', 'COUNT', PAGE).catch(() => {
        throw debuggerUnavailable();
      })) as StreamEntry[];
      for (const entry of page) {
        const event = toDebugEvent(entry);
        if (!event) continue;
        if (filters.type !== undefined && event.type !== filters.type) continue;
        if (filters.event !== undefined && event.event !== filters.event) continue;
        if (filters.status !== undefined && event.status !== filters.status) continue;
        if (filters.violations === true && !hasPlanFindings(event)) continue;
        found.push(event);
        if (found.length === limit) break;
      }
      scanned += page.length;
      const last = page[page.length - 1];
      if (page.length < PAGE || !last) break;
      end = exclusiveBelow(last[0]);
    }
    return found;
  }

  /** The message's outcomes, oldest first, from the write key's capped outcome stream. */
  async deliveries(accountId: string, writeKeyId: string, messageId: string): Promise<DeliveryOutcomeView[]> {
    if (messageId.length === 0 || messageId.length > 200)
      throw invalidField('messageId', 'must have 1 to 200 characters');
    const redis = this.client();
    const id = await this.writeKeyOf(accountId, writeKeyId);
    const key = debuggerKeys.outcomes(id);
    const found: DeliveryOutcomeView[] = [];
    let start = '-';
    for (let scanned = 0; scanned < MAX_SCANNED_OUTCOMES;) {
      const page = (await redis.xrange(key, start, '+', 'COUNT', 1000).catch(() => {
        throw debuggerUnavailable();
      })) as StreamEntry[];
      for (const [, fields] of page) {
        if (fieldOf(fields, 'm') !== messageId) continue;
        try {
          found.push(parseJsonText(fieldOf(fields, 'd') ?? '') as DeliveryOutcomeView);
        } catch {
          // Not one of ours.
        }
      }
      scanned += page.length;
      const last = page[page.length - 1];
      if (page.length < 1000 || !last) break;
      start = `(${last[0]}`;
    }
    return found;
  }
}
