import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { decideEach } from './regulated-events';
import { RegulatedSubjects, SubjectHasher, subjectHash, type EventIdentity } from './regulated-subjects';

const key = randomBytes(32);
const at = Date.parse('2026-11-29T12:00:00Z');

const subjectsOf = (suppressed: string[], deleted: string[] = [], remembered?: number) =>
  new RegulatedSubjects(
    {
      hashKey: key.toString('base64'),
      subjects: [
        ...suppressed.map((id) => ({
          hash: subjectHash(key, 'USER_ID', id),
          type: 'USER_ID' as const,
          suppressed: true,
          deleteCutoff: null,
        })),
        ...deleted.map((id) => ({
          hash: subjectHash(key, 'ANONYMOUS_ID', id),
          type: 'ANONYMOUS_ID' as const,
          suppressed: false,
          deleteCutoff: new Date(at).toISOString(),
        })),
      ],
    },
    remembered,
  );

/** The identifiers hashed while `run` runs, as `<type>:<id>`. */
function hashedDuring(run: () => void): string[] {
  const hashed: string[] = [];
  const original = SubjectHasher.prototype.digest;
  const spy = jest.spyOn(SubjectHasher.prototype, 'digest').mockImplementation(function (
    this: SubjectHasher,
    type,
    id,
  ) {
    hashed.push(`${type}:${id}`);
    return original.call(this, type, id);
  });
  try {
    run();
  } finally {
    spy.mockRestore();
  }
  return hashed;
}

describe('decideEach', () => {
  it('decides as decide() does, hashing each identifier of a type with subjects once', () => {
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
    let decisions: unknown[] = [];
    const hashed = hashedDuring(() => {
      decisions = decideEach(subjects, events, at);
    });
    expect(decisions).toEqual(['suppressed', 'suppressed', 'deleted', null, null, 'suppressed', null]);
    // A suppressed user id decides without its anonymous id; a previous id is either type.
    expect(hashed).toEqual(['USER_ID:x', 'ANONYMOUS_ID:anon-d', 'USER_ID:y', 'ANONYMOUS_ID:a']);
    expect(hashedDuring(() => decideEach(subjects, events, at))).toEqual([]);
    expect(decideEach(subjects, [{ anonymousId: 'anon-d' }], at + 1)).toEqual([null]);
  });

  it('hashes nothing for an account without subjects', () => {
    const subjects = subjectsOf([]);
    let decisions: unknown[] = [];
    expect(
      hashedDuring(() => {
        decisions = decideEach(subjects, [{ userId: 'x' }, { userId: 'y' }], at);
      }),
    ).toEqual([]);
    expect(decisions).toEqual([null, null]);
  });

  it('remembers at most its limit of identifiers, then starts over', () => {
    const subjects = subjectsOf(['x'], [], 3);
    const ids = ['p', 'q', 'r'].map((userId) => ({ userId }));
    expect(hashedDuring(() => decideEach(subjects, ids, at))).toEqual([
      'USER_ID:p',
      'USER_ID:q',
      'USER_ID:r',
    ]);
    expect(hashedDuring(() => decideEach(subjects, ids, at))).toEqual([]);
    // Full, it forgets all three for x; r then finds it full again.
    expect(hashedDuring(() => decideEach(subjects, [{ userId: 'x' }, ...ids], at))).toEqual([
      'USER_ID:x',
      'USER_ID:p',
      'USER_ID:q',
      'USER_ID:r',
    ]);
    expect(
      hashedDuring(() => expect(decideEach(subjects, [{ userId: 'x' }], at)).toEqual(['suppressed'])),
    ).toEqual(['USER_ID:x']);
  });

  it('keeps a user id and an anonymous id of the same text apart', () => {
    const subjects = new RegulatedSubjects({
      hashKey: key.toString('base64'),
      subjects: [{ hash: subjectHash(key, 'ANONYMOUS_ID', 'same'), suppressed: true, deleteCutoff: null }],
    });
    expect(
      decideEach(subjects, [{ userId: 'same' }, { anonymousId: 'same' }, { userId: 'same' }], at),
    ).toEqual([null, 'suppressed', null]);
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
