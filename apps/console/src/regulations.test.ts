import fc from 'fast-check';
import { idsOf, inputKey, MAX_IDS, overallTone, TARGET_LABELS, targetTone, TYPES } from './regulations';

// An id as a person may carry one: any Unicode (emoji, combining marks, right-to-left, NUL), but
// no line break (the box's separator) and nothing `trim` removes at its ends.
const id = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 40 })
  .filter((s) => !/[\r\n]/.test(s) && s.trim() === s && s.length > 0);

describe('idsOf: the text box to the API', () => {
  it('carries every id exactly, once, in the order given, whatever the line breaks', () => {
    fc.assert(
      fc.property(
        fc.array(id, { minLength: 1, maxLength: 30 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        (ids, newline) => {
          const text = ids.join(newline);
          expect(idsOf(text)).toEqual([...new Set(ids)]);
        },
      ),
    );
  });

  it('skips blank lines and the spaces around an id, and keeps the spaces inside one', () => {
    expect(idsOf('  user 1  \n\n\t\nuser-2\r\n user 1\r\n\u00a0')).toEqual(['user 1', 'user-2']);
  });

  it('keeps the Unicode line separators inside an id: only CR and LF end a line', () => {
    expect(idsOf('a\u2028b\nc\u2029d')).toEqual(['a\u2028b', 'c\u2029d']);
  });

  it('reads nothing from an empty or blank box', () => {
    expect(idsOf('')).toEqual([]);
    expect(idsOf(' \n\r\n\t ')).toEqual([]);
  });

  it('counts 5,000 distinct ids as the most one call takes', () => {
    const text = Array.from({ length: MAX_IDS + 1 }, (_, i) => `user-${i}`).join('\n');
    expect(idsOf(text)).toHaveLength(MAX_IDS + 1);
    expect(MAX_IDS).toBe(5000);
  });
});

describe('inputKey: Create only for the input previewed', () => {
  it('differs when the type, the subject type or any id differs, and never collides across fields', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...(Object.keys(TYPES) as (keyof typeof TYPES)[])),
        fc.constantFrom('USER_ID', 'ANONYMOUS_ID'),
        fc.array(id, { maxLength: 5 }),
        fc.constantFrom(...(Object.keys(TYPES) as (keyof typeof TYPES)[])),
        fc.constantFrom('USER_ID', 'ANONYMOUS_ID'),
        fc.array(id, { maxLength: 5 }),
        (t1, s1, ids1, t2, s2, ids2) => {
          const same = t1 === t2 && s1 === s2 && JSON.stringify(ids1) === JSON.stringify(ids2);
          expect(inputKey(t1, s1, ids1) === inputKey(t2, s2, ids2)).toBe(same);
        },
      ),
    );
  });
});

describe('what each type does', () => {
  it('is the table of docs/privacy.md', () => {
    const table = Object.fromEntries(
      Object.entries(TYPES).map(([type, does]) => [type, [does.suppresses, does.deletes, does.forwards]]),
    );
    expect(table).toEqual({
      SUPPRESS_WITH_DELETE: [true, true, true],
      DELETE_ONLY: [false, true, true],
      SUPPRESS_WITH_DELETE_INTERNAL: [true, true, false],
      DELETE_INTERNAL: [false, true, false],
      SUPPRESS_ONLY: [true, false, false],
      UNSUPPRESS: [false, false, false],
    });
  });
});

describe('status tones', () => {
  it('shows not_supported as neutral, failed as an error, forwarded and waiting as in progress', () => {
    expect(targetTone('not_supported')).toBe('neutral');
    expect(targetTone('failed')).toBe('bad');
    expect(targetTone('done')).toBe('good');
    for (const status of ['forwarded', 'waiting_fence', 'pending', 'running'] as const)
      expect(targetTone(status)).toBe('progress');
    expect(TARGET_LABELS.not_supported).toBe('not supported');
  });

  it('shows a partial success as a warning, not as a failure', () => {
    expect(overallTone('FINISHED')).toBe('good');
    expect(overallTone('FAILED')).toBe('bad');
    expect(overallTone('PARTIAL_SUCCESS')).toBe('warn');
    expect(overallTone('RUNNING')).toBe('progress');
    expect(overallTone('INITIALIZED')).toBe('progress');
  });
});
