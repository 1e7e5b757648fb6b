import { isDeliveryKind } from '@pipeline/catalog';
import { badRequest, invalidField } from '../http/api-errors';
import { isUuid } from '../http/ids';
import { deadLetterStatuses, type DeadLetterStatus } from './dead-letter.entity';

// What a dead-letter request selects, checked at the edge: a filter of the list, or the
// records a replay or discard is for. Pure, so its edges are tested generatively.

/** Records a replay or discard takes at most in one call (ids named, or selected by filter). */
export const MAX_SELECTED = 1000;

/** The filters of the list, and of a replay or discard: each one narrows (AND). */
export interface DeadLetterFilter {
  /** The delivery kind. */
  destination?: string;
  /** The target: an integration id, or the kind itself. */
  destinationId?: string;
  reasonCode?: string;
  /** Last seen at or after. */
  since?: Date;
  /** Last seen before. */
  until?: Date;
}

export interface DeadLetterSelection extends DeadLetterFilter {
  /** Lowercase uuids, each once. */
  ids?: string[];
}

/** The filters as a request gives them: strings, absent when not given. */
export interface DeadLetterFilterInput {
  destination?: string | undefined;
  destinationId?: string | undefined;
  reasonCode?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

// reasonCategory's codes (@pipeline/destinations): `http_400`, `attempts_exhausted`, `other`, ...
const reasonCodePattern = /^(http_\d{3}|[a-z][a-z_]{0,39})$/;
// A date, or a date and time with an optional fraction and zone (ISO 8601, as JSON writes it).
const timestampPattern = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

function timestamp(value: string, path: string): Date {
  const at = timestampPattern.test(value) ? new Date(value) : null;
  if (!at || Number.isNaN(at.getTime()))
    throw invalidField(path, 'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z');
  return at;
}

/** The filters, each checked: 400 `validation_failed` naming the field, `invalid_time_range` when since is not before until. */
export function parseDeadLetterFilter(
  input: DeadLetterFilterInput,
  where: 'query' | 'body',
): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  if (input.destination !== undefined) {
    if (!isDeliveryKind(input.destination))
      throw invalidField(
        `${where}.destination`,
        'must be a delivery kind (warehouse, log, or a destination app type)',
      );
    filter.destination = input.destination;
  }
  if (input.destinationId !== undefined) {
    if (input.destinationId.length === 0 || input.destinationId.length > 200)
      throw invalidField(`${where}.destinationId`, 'must be 1 to 200 characters');
    filter.destinationId = input.destinationId;
  }
  if (input.reasonCode !== undefined) {
    if (!reasonCodePattern.test(input.reasonCode))
      throw invalidField(
        `${where}.reasonCode`,
        'must be a reason code such as http_400 or attempts_exhausted',
      );
    filter.reasonCode = input.reasonCode;
  }
  if (input.since !== undefined) filter.since = timestamp(input.since, `${where}.since`);
  if (input.until !== undefined) filter.until = timestamp(input.until, `${where}.until`);
  if (filter.since && filter.until && filter.since.getTime() >= filter.until.getTime())
    throw badRequest('invalid_time_range', 'since must be before until');
  return filter;
}

/** The list's status: pending unless asked. */
export function parseDeadLetterStatus(status: string | undefined): DeadLetterStatus {
  if (status === undefined) return 'pending';
  if (!(deadLetterStatuses as readonly string[]).includes(status))
    throw invalidField('query.status', `must be one of ${deadLetterStatuses.join(', ')}`);
  return status as DeadLetterStatus;
}

/**
 * What a replay or discard is for: ids and filters together (AND), at least one of them;
 * none is 400 `dead_letter_selector_required`, so an empty body never takes every record.
 */
export function parseDeadLetterSelection(
  body: DeadLetterFilterInput & { ids?: string[] | undefined },
): DeadLetterSelection {
  const selection: DeadLetterSelection = parseDeadLetterFilter(body, 'body');
  if (body.ids !== undefined) {
    if (!Array.isArray(body.ids) || body.ids.length === 0 || body.ids.length > MAX_SELECTED)
      throw invalidField('body.ids', `must hold 1 to ${MAX_SELECTED} ids`);
    const bad = body.ids.findIndex((id) => typeof id !== 'string' || !isUuid(id));
    if (bad >= 0) throw invalidField(`body.ids.${bad}`, 'must be a dead letter id (a uuid)');
    selection.ids = [...new Set(body.ids.map((id) => id.toLowerCase()))];
  }
  if (Object.keys(selection).length === 0)
    throw badRequest(
      'dead_letter_selector_required',
      'Name the dead letters: ids, destination, destinationId, reasonCode, since or until',
    );
  return selection;
}
