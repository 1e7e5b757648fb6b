import { parseJsonText } from '@pipeline/events';
import { debuggerKeys, type DebugEventRecord, type RedisClient } from '@pipeline/redis';
import type { EventIdentity, RegulatedSubjects } from '@pipeline/tenancy';

type StreamEntry = [id: string, fields: string[]];

/** Entries read per XRANGE page; the streams are capped near 500 (DEBUGGER_STREAM_MAX_LEN). */
const PAGE = 200;
/** Ids per XDEL. */
const DELETE_CHUNK = 500;

const identityKeys = ['userId', 'anonymousId', 'previousId'] as const;

const fieldOf = (fields: readonly string[], name: string): string | undefined => {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
};

/**
 * The ids a recorded payload names. A payload over 16 KB was recorded as its top-level scalars
 * of at most 256 characters plus the first 1024 characters of its JSON (debugPayload): a longer
 * id is then read from that start of the JSON when it is there whole.
 */
function identityOf(payload: unknown): EventIdentity {
  if (payload === null || typeof payload !== 'object') return {};
  const fields = payload as Record<string, unknown>;
  const identity: Record<string, unknown> = {};
  for (const key of identityKeys) {
    const value = fields[key];
    if (typeof value === 'string') identity[key] = value;
    else if (fields.truncated === true && typeof fields.preview === 'string') {
      const literal = new RegExp(`"${key}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")`).exec(fields.preview)?.[1];
      if (literal === undefined) continue;
      try {
        identity[key] = JSON.parse(literal) as unknown;
      } catch {
        // A literal cut in the middle of an escape: not an id that can be read.
      }
    }
  }
  return identity;
}

/** The entry id's milliseconds: when the entry was added, about when the event was received. */
const addedAtMs = (entryId: string) => Number(entryId.slice(0, entryId.indexOf('-')));

/** Every entry of a stream, oldest first, a page at a time. */
async function* entriesOf(redis: RedisClient, key: string): AsyncGenerator<StreamEntry> {
  let start = '-';
  for (;;) {
    const page = (await redis.xrange(key, start, '+', 'COUNT', PAGE)) as StreamEntry[];
    yield* page;
    const last = page[page.length - 1];
    if (page.length < PAGE || !last) return;
    start = `(${last[0]}`;
  }
}

async function deleteEntries(redis: RedisClient, key: string, ids: readonly string[]): Promise<number> {
  let removed = 0;
  for (let at = 0; at < ids.length; at += DELETE_CHUNK)
    removed += await redis.xdel(key, ...ids.slice(at, at + DELETE_CHUNK));
  return removed;
}

/**
 * Removes, from each write key's capped debugger streams (events and outcomes), the entries of
 * events the regulation decides; returns how many entries were removed.
 *
 * An event entry (field `d`: DebugEventRecord) is decided on its payload's ids at its
 * `receivedAt` (the entry id's time when that does not parse). Outcome entries carry only a
 * message id (field `m`): those of the removed events' message ids go with them.
 */
export async function eraseFromDebugger(
  redis: RedisClient,
  writeKeyIds: readonly string[],
  regulation: Pick<RegulatedSubjects, 'decide'>,
): Promise<{ removed: number }> {
  let removed = 0;
  for (const writeKeyId of writeKeyIds) {
    const eventsKey = debuggerKeys.events(writeKeyId);
    const doomed: string[] = [];
    const messageIds = new Set<string>();
    for await (const [id, fields] of entriesOf(redis, eventsKey)) {
      let record: Partial<DebugEventRecord>;
      try {
        record = parseJsonText(fieldOf(fields, 'd') ?? '') as Partial<DebugEventRecord>;
      } catch {
        continue;
      }
      if (record === null || typeof record !== 'object') continue;
      const receivedAtMs = typeof record.receivedAt === 'string' ? Date.parse(record.receivedAt) : NaN;
      const at = Number.isNaN(receivedAtMs) ? addedAtMs(id) : receivedAtMs;
      if (regulation.decide(identityOf(record.payload), at) === null) continue;
      doomed.push(id);
      if (typeof record.messageId === 'string') messageIds.add(record.messageId);
    }
    removed += await deleteEntries(redis, eventsKey, doomed);
    if (messageIds.size === 0) continue;
    const outcomesKey = debuggerKeys.outcomes(writeKeyId);
    const outcomes: string[] = [];
    for await (const [id, fields] of entriesOf(redis, outcomesKey)) {
      const messageId = fieldOf(fields, 'm');
      if (messageId !== undefined && messageIds.has(messageId)) outcomes.push(id);
    }
    removed += await deleteEntries(redis, outcomesKey, outcomes);
  }
  return { removed };
}
