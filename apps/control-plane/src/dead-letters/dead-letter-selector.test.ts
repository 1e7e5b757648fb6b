import fc from 'fast-check';
import { AppError } from '@pipeline/errors';
import { deliveryKinds } from '@pipeline/catalog';
import {
  MAX_SELECTED,
  parseDeadLetterFilter,
  parseDeadLetterSelection,
  parseDeadLetterStatus,
} from './dead-letter-selector';

// The edge of every dead-letter request: what a client sends (JSON, a query string) becomes a
// selection the SQL takes as it is, or a 400 with a code. Never anything else.

/** The status and code a parse refused with, or the selection. */
function outcome<T>(parse: () => T): T | { status: number; code: string } {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.status, code: error.code };
  }
}

const kind = fc.constantFrom(...deliveryKinds);
const reasonCode = fc.oneof(
  fc.integer({ min: 100, max: 599 }).map((n) => `http_${n}`),
  fc.constantFrom('attempts_exhausted', 'data_error', 'unstorable_event', 'other'),
);
const instant = fc
  .integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) })
  .map((ms) => new Date(ms));
const filterInput = fc.record(
  {
    destination: kind,
    destinationId: fc.oneof(fc.uuid(), kind, fc.string({ minLength: 1, maxLength: 200 })),
    reasonCode,
    since: instant,
    until: instant,
  },
  { requiredKeys: [] },
);

describe('dead-letter selectors', () => {
  it('carries every valid filter as it was given, dates as instants', () => {
    fc.assert(
      fc.property(filterInput, (input) => {
        const given = {
          ...input,
          since: input.since?.toISOString(),
          until: input.until?.toISOString(),
        };
        const parsed = outcome(() => parseDeadLetterFilter(given, 'query'));
        if (input.since && input.until && input.since >= input.until) {
          expect(parsed).toEqual({ status: 400, code: 'invalid_time_range' });
          return;
        }
        expect(parsed).toEqual(input);
      }),
    );
  });

  it('takes a selection only when it names something, ids lowercased and each once', () => {
    fc.assert(
      fc.property(
        filterInput.filter((f) => !(f.since && f.until && f.since >= f.until)),
        fc.option(fc.array(fc.uuid(), { minLength: 1, maxLength: 20 }), { nil: undefined }),
        (input, ids) => {
          const body = {
            ...input,
            since: input.since?.toISOString(),
            until: input.until?.toISOString(),
            ...(ids ? { ids: [...ids, ...ids.map((id) => id.toUpperCase())] } : {}),
          };
          const parsed = outcome(() => parseDeadLetterSelection(body));
          if (Object.keys(input).length === 0 && !ids) {
            expect(parsed).toEqual({ status: 400, code: 'dead_letter_selector_required' });
            return;
          }
          expect(parsed).toEqual({
            ...input,
            ...(ids ? { ids: [...new Set(ids.map((id) => id.toLowerCase()))] } : {}),
          });
        },
      ),
    );
  });

  it('answers anything a client may send with a selection or a 400, never another error', () => {
    const anything = fc.oneof(
      fc.string(),
      fc.constant(undefined),
      fc.constantFrom('', ' ', '2026-13-45', 'http_4000', 'Webhook'),
    );
    fc.assert(
      fc.property(
        fc.record({
          destination: anything,
          destinationId: anything,
          reasonCode: anything,
          since: fc.oneof(
            anything,
            instant.map((d) => d.toISOString()),
          ),
          until: fc.oneof(
            anything,
            instant.map((d) => d.toISOString()),
          ),
          ids: fc.option(fc.array(fc.oneof(fc.uuid(), fc.string()), { maxLength: 3 }), { nil: undefined }),
        }),
        fc.option(fc.string(), { nil: undefined }),
        (body, status) => {
          for (const parse of [
            () => parseDeadLetterSelection(body),
            () => parseDeadLetterFilter(body, 'query'),
            () => parseDeadLetterStatus(status),
          ]) {
            const parsed = outcome<unknown>(parse) as { status?: number; code?: string } | string;
            // outcome() rethrows anything but an AppError: that fails the property too.
            if (typeof parsed === 'object' && parsed.code !== undefined) expect(parsed.status).toBe(400);
          }
        },
      ),
    );
  });

  it('bounds ids at MAX_SELECTED and names the bad one', () => {
    const id = '6f1c2a4e-8b7d-4c3a-9e2f-1a2b3c4d5e6f';
    expect(outcome(() => parseDeadLetterSelection({ ids: Array(MAX_SELECTED).fill(id) }))).toEqual({
      ids: [id],
    });
    expect(outcome(() => parseDeadLetterSelection({ ids: Array(MAX_SELECTED + 1).fill(id) }))).toEqual({
      status: 400,
      code: 'validation_failed',
    });
    let refused: unknown;
    try {
      parseDeadLetterSelection({ ids: [id, 'nope'] });
    } catch (error) {
      refused = error;
    }
    expect((refused as AppError).details).toEqual({
      errors: [{ path: 'body.ids.1', message: 'must be a dead letter id (a uuid)' }],
    });
    expect(parseDeadLetterStatus(undefined)).toBe('pending');
    expect(outcome(() => parseDeadLetterStatus('Pending'))).toEqual({
      status: 400,
      code: 'validation_failed',
    });
  });
  /** The refusal as a client reads it: status, code, message and the field errors. */
  function refusal(parse: () => unknown) {
    try {
      parse();
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { status: error.status, code: error.code, message: error.message, details: error.details };
    }
    throw new Error('expected a refusal');
  }
  const fieldRefusal = (path: string, message: string) => ({
    status: 400,
    code: 'validation_failed',
    message: 'The request is not valid',
    details: { errors: [{ path, message }] },
  });

  it.each([
    [
      { destination: 'Webhook' },
      'destination',
      'must be a delivery kind (warehouse, log, or a destination app type)',
    ],
    [{ destinationId: '' }, 'destinationId', 'must be 1 to 200 characters'],
    [{ destinationId: 'x'.repeat(201) }, 'destinationId', 'must be 1 to 200 characters'],
    [
      { reasonCode: 'http_4000' },
      'reasonCode',
      'must be a reason code such as http_400 or attempts_exhausted',
    ],
    [
      { reasonCode: 'xhttp_400' },
      'reasonCode',
      'must be a reason code such as http_400 or attempts_exhausted',
    ],
    [{ reasonCode: 'Other' }, 'reasonCode', 'must be a reason code such as http_400 or attempts_exhausted'],
    [{ since: 'x2026-11-27' }, 'since', 'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z'],
    // Dates that JavaScript's Date reads but the API does not take.
    [{ since: 'foo 2026-11-27' }, 'since', 'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z'],
    [
      { since: '2026-11-27T16:00:00+0100' },
      'since',
      'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z',
    ],
    [
      { reasonCode: 'http_400 x' },
      'reasonCode',
      'must be a reason code such as http_400 or attempts_exhausted',
    ],
    [{ since: '2026-11-27x' }, 'since', 'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z'],
    [{ until: '2026-13-45' }, 'until', 'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z'],
    [
      { until: '2026-11-27T16:00:00+1:00' },
      'until',
      'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z',
    ],
    [
      { until: '2026-11-27T16:00:00+01:0' },
      'until',
      'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z',
    ],
    [
      { until: '2026-11-27T16:00:00*01:00' },
      'until',
      'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z',
    ],
    [
      { until: '2026-11-27T16:00:00+a1:00' },
      'until',
      'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z',
    ],
    [
      { until: '2026-11-27T16:00:00+01:a0' },
      'until',
      'must be an ISO 8601 timestamp, e.g. 2026-11-27T16:00:00Z',
    ],
  ])('refuses bad input %# at its field, in the query and in the body', (input, field, message) => {
    expect(refusal(() => parseDeadLetterFilter(input, 'query'))).toEqual(
      fieldRefusal(`query.${field}`, message),
    );
    expect(refusal(() => parseDeadLetterSelection(input))).toEqual(fieldRefusal(`body.${field}`, message));
  });

  it.each([
    ['2026-11-27', Date.UTC(2026, 10, 27)],
    ['2026-11-27T16:00', Date.UTC(2026, 10, 27, 16)],
    ['2026-11-27T16:00Z', Date.UTC(2026, 10, 27, 16)],
    ['2026-11-27T16:00:05+01:00', Date.UTC(2026, 10, 27, 15, 0, 5)],
    ['2026-11-27T16:00:05-01:30', Date.UTC(2026, 10, 27, 17, 30, 5)],
    ['2026-11-27T16:00:05.123Z', Date.UTC(2026, 10, 27, 16, 0, 5, 123)],
  ])('takes the timestamp %s', (text, ms) => {
    expect(parseDeadLetterFilter({ since: text }, 'query').since?.getTime()).toBe(ms);
  });

  it('takes the edges of each field and refuses a range that is empty', () => {
    expect(parseDeadLetterFilter({ destinationId: 'x' }, 'query')).toEqual({ destinationId: 'x' });
    expect(parseDeadLetterFilter({ destinationId: 'x'.repeat(200) }, 'query').destinationId).toHaveLength(
      200,
    );
    expect(parseDeadLetterFilter({ reasonCode: 'a'.repeat(40) }, 'query')).toEqual({
      reasonCode: 'a'.repeat(40),
    });
    expect(refusal(() => parseDeadLetterFilter({ reasonCode: 'a'.repeat(41) }, 'query')).code).toBe(
      'validation_failed',
    );
    const at = '2026-11-27T16:00:00Z';
    expect(refusal(() => parseDeadLetterFilter({ since: at, until: at }, 'query'))).toEqual({
      status: 400,
      code: 'invalid_time_range',
      message: 'since must be before until',
      details: undefined,
    });
    expect(parseDeadLetterFilter({ since: at, until: '2026-11-27T16:00:00.001Z' }, 'query')).toEqual({
      since: new Date(at),
      until: new Date('2026-11-27T16:00:00.001Z'),
    });
  });

  it('refuses an empty, oversized or malformed id list and an empty selection with their messages', () => {
    const id = '6f1c2a4e-8b7d-4c3a-9e2f-1a2b3c4d5e6f';
    const ids = fieldRefusal('body.ids', `must hold 1 to ${MAX_SELECTED} ids`);
    expect(refusal(() => parseDeadLetterSelection({ ids: [] }))).toEqual(ids);
    expect(refusal(() => parseDeadLetterSelection({ ids: Array(MAX_SELECTED + 1).fill(id) }))).toEqual(ids);
    expect(refusal(() => parseDeadLetterSelection({ ids: id as unknown as string[] }))).toEqual(ids);
    expect(refusal(() => parseDeadLetterSelection({ ids: ['nope', id] }))).toEqual(
      fieldRefusal('body.ids.0', 'must be a dead letter id (a uuid)'),
    );
    expect(refusal(() => parseDeadLetterSelection({ ids: [id, 7 as unknown as string] }))).toEqual(
      fieldRefusal('body.ids.1', 'must be a dead letter id (a uuid)'),
    );
    expect(parseDeadLetterSelection({ ids: [id] })).toEqual({ ids: [id] });
    expect(refusal(() => parseDeadLetterSelection({}))).toEqual({
      status: 400,
      code: 'dead_letter_selector_required',
      message: 'Name the dead letters: ids, destination, destinationId, reasonCode, since or until',
      details: undefined,
    });
    expect(refusal(() => parseDeadLetterStatus('Pending'))).toEqual(
      fieldRefusal('query.status', 'must be one of pending, replayed, discarded'),
    );
  });
});
