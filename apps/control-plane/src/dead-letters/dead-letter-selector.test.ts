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
});
