import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { decideEach } from './regulated-events';
import { RegulatedSubjects, subjectHash, type EventIdentity } from './regulated-subjects';

const key = randomBytes(32);
const at = Date.parse('2026-11-29T12:00:00Z');

/** Counts the decisions made, to show each distinct set of identifiers is decided once. */
class CountingSubjects extends RegulatedSubjects {
  decisions = 0;
  override decide(event: EventIdentity, receivedAtMs: number) {
    this.decisions += 1;
    return super.decide(event, receivedAtMs);
  }
}

const subjectsOf = (suppressed: string[], deleted: string[] = []) =>
  new CountingSubjects({
    hashKey: key.toString('base64'),
    subjects: [
      ...suppressed.map((id) => ({
        hash: subjectHash(key, 'USER_ID', id),
        suppressed: true,
        deleteCutoff: null,
      })),
      ...deleted.map((id) => ({
        hash: subjectHash(key, 'ANONYMOUS_ID', id),
        suppressed: false,
        deleteCutoff: new Date(at).toISOString(),
      })),
    ],
  });

describe('decideEach', () => {
  it('decides as decide() does, once per distinct set of identifiers', () => {
    const subjects = subjectsOf(['x'], ['anon-d']);
    const events: EventIdentity[] = [
      { userId: 'x', anonymousId: 'a' },
      { userId: 'x', anonymousId: 'a' },
      { anonymousId: 'anon-d' },
      { userId: 'y', anonymousId: 'a' },
      { userId: 'y', anonymousId: 'a' },
      { previousId: 'x' },
      // Not a string: no identifier, as decide() reads it.
      { userId: 42, anonymousId: 'a' },
    ];
    expect(decideEach(subjects, events, at)).toEqual([
      'suppressed',
      'suppressed',
      'deleted',
      null,
      null,
      'suppressed',
      null,
    ]);
    expect(subjects.decisions).toBe(5);
    expect(decideEach(subjects, [{ anonymousId: 'anon-d' }], at + 1)).toEqual([null]);
  });

  it('hashes nothing for an account without subjects', () => {
    const subjects = subjectsOf([]);
    expect(decideEach(subjects, [{ userId: 'x' }, { userId: 'y' }], at)).toEqual([null, null]);
    expect(subjects.decisions).toBe(0);
  });

  it('never lets two different sets of identifiers share a decision (property)', () => {
    const id = fc.option(fc.string({ unit: 'grapheme', maxLength: 6 }), { nil: undefined });
    fc.assert(
      fc.property(
        fc.array(fc.record({ userId: id, anonymousId: id, previousId: id }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }), { maxLength: 4 }),
        (events, suppressed) => {
          const subjects = subjectsOf(suppressed, suppressed);
          const expected = events.map((event) => subjects.decide(event, at));
          expect(decideEach(subjects, events, at)).toEqual(expected);
        },
      ),
    );
  });
});
