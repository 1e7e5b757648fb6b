import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  RegulatedSubjects,
  subjectColumns,
  subjectHash,
  SubjectHasher,
  type RegulatedSubjectsRecord,
} from './index';
import { wellFormedRecord } from './regulated-subjects';

const key = randomBytes(32);
const hashKey = key.toString('base64');
const t = (iso: string) => Date.parse(iso);

describe('subjectHash', () => {
  it('is keyed, typed and 22 base64url characters', () => {
    const hash = subjectHash(key, 'USER_ID', 'u1');
    expect(hash).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(subjectHash(key, 'USER_ID', 'u1')).toBe(hash);
    expect(subjectHash(key, 'ANONYMOUS_ID', 'u1')).not.toBe(hash);
    expect(subjectHash(randomBytes(32), 'USER_ID', 'u1')).not.toBe(hash);
    expect(subjectHash(key, 'USER_ID', 'u2')).not.toBe(hash);
  });

  it('tells apart any two different ids (full Unicode)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        fc.pre(a !== b);
        expect(subjectHash(key, 'USER_ID', a)).not.toBe(subjectHash(key, 'USER_ID', b));
      }),
    );
  });
});

describe('SubjectHasher', () => {
  it('is subjectHash, made once per key', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('USER_ID' as const, 'ANONYMOUS_ID' as const),
        fc.string({ unit: 'binary' }),
        (type, id) => {
          expect(new SubjectHasher(key).hash(type, id)).toBe(subjectHash(key, type, id));
        },
      ),
    );
  });
});

describe('RegulatedSubjects, odd identifiers', () => {
  it('never hashes a missing or empty identifier, even when such a hash is in the record', () => {
    const odd = new RegulatedSubjects({
      hashKey,
      subjects: ['undefined', 'null', '42', ''].map((id) => ({
        hash: subjectHash(key, 'USER_ID', id),
        suppressed: true,
        deleteCutoff: null,
      })),
    });
    expect(odd.decide({}, 0)).toBeNull();
    expect(odd.decide({ userId: null, anonymousId: 42 }, 0)).toBeNull();
    expect(odd.decide({ userId: '' }, 0)).toBeNull();
    expect(odd.decide({ userId: '42' }, 0)).toBe('suppressed');
  });

  it('keeps a suppression over a later identifier that is only deleted', () => {
    const both = new RegulatedSubjects({
      hashKey,
      subjects: [
        { hash: subjectHash(key, 'USER_ID', 'u'), suppressed: true, deleteCutoff: null },
        {
          hash: subjectHash(key, 'ANONYMOUS_ID', 'a'),
          suppressed: false,
          deleteCutoff: '2030-01-01T00:00:00Z',
        },
      ],
    });
    expect(both.decide({ userId: 'u', anonymousId: 'a', previousId: 'a' }, 0)).toBe('suppressed');
    expect(both.decide({ anonymousId: 'a', previousId: 'u' }, 0)).toBe('suppressed');
    expect(both.decide({ anonymousId: 'a' }, Date.parse('2030-01-01T00:00:00Z'))).toBe('deleted');
    expect(both.decide({ anonymousId: 'a' }, Date.parse('2030-01-01T00:00:00.001Z'))).toBeNull();
  });
});

describe('RegulatedSubjects with typed subjects', () => {
  it('hashes only the identifiers of the types it has subjects of', () => {
    const users = new RegulatedSubjects({
      hashKey,
      subjects: [
        { hash: subjectHash(key, 'USER_ID', 'same'), type: 'USER_ID', suppressed: true, deleteCutoff: null },
      ],
    });
    expect(users.decide({ userId: 'same' }, 0)).toBe('suppressed');
    expect(users.decide({ anonymousId: 'same' }, 0)).toBeNull();
    expect(users.decide({ previousId: 'same' }, 0)).toBe('suppressed');
    const anonymous = new RegulatedSubjects({
      hashKey,
      subjects: [
        {
          hash: subjectHash(key, 'ANONYMOUS_ID', 'same'),
          type: 'ANONYMOUS_ID',
          suppressed: true,
          deleteCutoff: null,
        },
      ],
    });
    expect(anonymous.decide({ userId: 'same' }, 0)).toBeNull();
    expect(anonymous.decide({ anonymousId: 'same' }, 0)).toBe('suppressed');
    expect(anonymous.decide({ previousId: 'same' }, 0)).toBe('suppressed');
    // The identifiers of the other type are not even hashed.
    const digest = jest.spyOn(SubjectHasher.prototype, 'digest');
    try {
      users.decide({ anonymousId: 'other-a' }, 0);
      anonymous.decide({ userId: 'other-u' }, 0);
      expect(digest).not.toHaveBeenCalled();
      users.decide({ userId: 'other-u' }, 0);
      anonymous.decide({ anonymousId: 'other-a' }, 0);
      expect(digest.mock.calls).toEqual([
        ['USER_ID', 'other-u'],
        ['ANONYMOUS_ID', 'other-a'],
      ]);
    } finally {
      digest.mockRestore();
    }
  });

  it('keeps a suppression by anonymous id over a previous id that is only deleted', () => {
    const subjects = new RegulatedSubjects({
      hashKey,
      subjects: [
        {
          hash: subjectHash(key, 'ANONYMOUS_ID', 's'),
          type: 'ANONYMOUS_ID',
          suppressed: true,
          deleteCutoff: null,
        },
        {
          hash: subjectHash(key, 'USER_ID', 'd'),
          type: 'USER_ID',
          suppressed: false,
          deleteCutoff: '2030-01-01T00:00:00Z',
        },
      ],
    });
    expect(subjects.decide({ anonymousId: 's', previousId: 'd' }, 0)).toBe('suppressed');
    expect(subjects.decide({ anonymousId: 'x', previousId: 'd' }, 0)).toBe('deleted');
  });
});

describe('RegulatedSubjects.decide', () => {
  const subjects = new RegulatedSubjects({
    hashKey,
    subjects: [
      { hash: subjectHash(key, 'USER_ID', 'suppressed'), suppressed: true, deleteCutoff: null },
      {
        hash: subjectHash(key, 'USER_ID', 'deleted'),
        suppressed: false,
        deleteCutoff: '2026-11-29T12:00:00.000Z',
      },
      {
        hash: subjectHash(key, 'ANONYMOUS_ID', 'anon'),
        suppressed: true,
        deleteCutoff: '2026-11-29T12:00:00.000Z',
      },
      { hash: 'not-a-hash-of-anything', suppressed: false, deleteCutoff: 'not a date' },
    ],
  });
  const noon = t('2026-11-29T12:00:00.000Z');

  it('drops a suppressed subject whenever its events were received', () => {
    expect(subjects.size).toBe(4);
    expect(subjects.decide({ userId: 'suppressed' }, noon + 86_400_000)).toBe('suppressed');
    expect(subjects.decide({ userId: 'suppressed' }, 0)).toBe('suppressed');
  });

  it('drops a deleted subject only at or before its cut-off', () => {
    expect(subjects.decide({ userId: 'deleted' }, noon)).toBe('deleted');
    expect(subjects.decide({ userId: 'deleted' }, noon - 1)).toBe('deleted');
    expect(subjects.decide({ userId: 'deleted' }, noon + 1)).toBeNull();
  });

  it('matches each identifier by its own type, and a previous id by either', () => {
    expect(subjects.decide({ anonymousId: 'anon' }, noon + 1)).toBe('suppressed');
    expect(subjects.decide({ userId: 'anon' }, noon)).toBeNull();
    expect(subjects.decide({ anonymousId: 'deleted' }, noon)).toBeNull();
    expect(subjects.decide({ userId: 'x', previousId: 'deleted' }, noon)).toBe('deleted');
    expect(subjects.decide({ userId: 'x', previousId: 'anon' }, noon)).toBe('suppressed');
    expect(subjects.decide({ userId: 'deleted', anonymousId: 'anon' }, noon)).toBe('suppressed');
  });

  it('ignores ids that are not strings or empty, and a cut-off that is not a time', () => {
    expect(subjects.decide({ userId: 42, anonymousId: '' }, noon)).toBeNull();
    expect(subjects.decide({}, noon)).toBeNull();
    expect(new RegulatedSubjects({ hashKey, subjects: [] }).decide({ userId: 'deleted' }, 0)).toBeNull();
  });
});

describe('RegulatedSubjects, many subjects', () => {
  /** What a record says of an identifier: the last entry of its hash, as a Map of them keeps it. */
  function expected(
    record: { hash: string; suppressed: boolean; deleteCutoff: string | null }[],
    type: 'USER_ID' | 'ANONYMOUS_ID',
    id: string,
    at: number,
  ) {
    const entry = new Map(record.map((s) => [s.hash, s])).get(subjectHash(key, type, id));
    if (!entry) return null;
    if (entry.suppressed) return 'suppressed';
    return at <= Date.parse(entry.deleteCutoff ?? '') ? 'deleted' : null;
  }

  it('decides every identifier as the record says, repeated subjects and odd hashes included (property)', () => {
    const id = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 });
    const entry = fc.record({
      id,
      type: fc.constantFrom('USER_ID' as const, 'ANONYMOUS_ID' as const),
      suppressed: fc.boolean(),
      deleteCutoff: fc.option(fc.constantFrom('2026-01-01T00:00:00Z', '2026-06-01T00:00:00Z', 'not a time'), {
        nil: null,
      }),
    });
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 40 }),
        fc.array(id, { maxLength: 10 }),
        fc.constantFrom(Date.parse('2025-12-31T00:00:00Z'), Date.parse('2026-03-01T00:00:00Z')),
        (entries, probes, at) => {
          const record = [
            // Hashes no id has, first: too short to be one, and empty. The others keep their places.
            { hash: 'short', suppressed: true, deleteCutoff: null },
            { hash: '', suppressed: true, deleteCutoff: null },
            ...entries.map((e) => ({
              hash: subjectHash(key, e.type, e.id),
              suppressed: e.suppressed,
              deleteCutoff: e.deleteCutoff,
            })),
          ];
          const listed = new RegulatedSubjects({ hashKey, subjects: record });
          // As the control plane sends it: columns, through JSON.
          const subjects = new RegulatedSubjects(
            JSON.parse(
              JSON.stringify({ accountId: 'a', writeKeyId: '', hashKey, ...subjectColumns(record) }),
            ) as RegulatedSubjectsRecord,
          );
          expect(listed.size).toBe(subjects.size);
          expect(subjects.size).toBe(new Set(entries.map((e) => subjectHash(key, e.type, e.id))).size);
          for (const probe of [...probes, ...entries.map((e) => e.id)])
            for (const type of ['USER_ID', 'ANONYMOUS_ID'] as const) {
              const event = type === 'USER_ID' ? { userId: probe } : { anonymousId: probe };
              // Twice: the second answer is the remembered one.
              for (let i = 0; i < 2; i += 1) {
                expect(subjects.decide(event, at)).toBe(expected(record, type, probe, at));
                expect(listed.decide(event, at)).toBe(expected(record, type, probe, at));
              }
            }
        },
      ),
    );
  });

  it('keeps the later rule of a subject listed twice, and counts it once', () => {
    const twice = (first: boolean, second: boolean) =>
      new RegulatedSubjects({
        hashKey,
        subjects: [
          { hash: subjectHash(key, 'USER_ID', 'u'), suppressed: first, deleteCutoff: '2030-01-01T00:00:00Z' },
          { hash: subjectHash(key, 'USER_ID', 'v'), suppressed: true, deleteCutoff: null },
          { hash: subjectHash(key, 'USER_ID', 'u'), suppressed: second, deleteCutoff: null },
        ],
      });
    const lifted = twice(true, false);
    expect(lifted.size).toBe(2);
    expect(lifted.decide({ userId: 'u' }, 0)).toBeNull();
    expect(lifted.decide({ userId: 'v' }, 0)).toBe('suppressed');
    expect(twice(false, true).decide({ userId: 'u' }, 0)).toBe('suppressed');
  });

  it('finds each of 100,000 subjects and none of 100,000 other ids', () => {
    const subjects = new RegulatedSubjects({
      hashKey,
      subjects: Array.from({ length: 100_000 }, (_, i) => ({
        hash: subjectHash(key, 'USER_ID', `user-${i}`),
        suppressed: i % 2 === 0,
        deleteCutoff: '2026-01-01T00:00:00Z',
      })),
    });
    expect(subjects.size).toBe(100_000);
    const found = { suppressed: 0, deleted: 0, none: 0 };
    for (let i = 0; i < 100_000; i += 1) {
      found[subjects.decide({ userId: `user-${i}` }, 0) ?? 'none'] += 1;
      found[subjects.decide({ userId: `other-${i}` }, 0) ?? 'none'] += 1;
    }
    expect(found).toEqual({ suppressed: 50_000, deleted: 50_000, none: 100_000 });
  });
});

describe('wellFormedRecord', () => {
  const good: RegulatedSubjectsRecord = {
    accountId: 'a',
    writeKeyId: '',
    hashKey,
    ...subjectColumns([
      { hash: subjectHash(key, 'USER_ID', 'u'), type: 'USER_ID', suppressed: true, deleteCutoff: null },
      { hash: subjectHash(key, 'USER_ID', 'v'), suppressed: false, deleteCutoff: '2026-01-01T00:00:00.000Z' },
      {
        hash: subjectHash(key, 'ANONYMOUS_ID', 'w'),
        type: 'ANONYMOUS_ID',
        suppressed: false,
        deleteCutoff: null,
      },
    ]),
  };

  it('takes columns that agree, and an account without subjects', () => {
    expect(good).toMatchObject({
      types: 'U*A',
      suppressed: '100',
      cutoffs: ['2026-01-01T00:00:00.000Z'],
      cutoffOf: [-1, 0, -1],
    });
    expect(wellFormedRecord(good)).toBe(true);
    expect(wellFormedRecord({ ...good, ...subjectColumns([]) })).toBe(true);
  });

  it.each([
    ['a hash cut short', { hashes: good.hashes.slice(1) }],
    ['a type missing', { types: 'U*' }],
    ['a flag missing', { suppressed: '10' }],
    ['a cut-off index missing', { cutoffOf: [-1, 0] }],
    ['a cut-off index out of range', { cutoffOf: [-1, 1, -1] }],
    ['a cut-off index below -1', { cutoffOf: [-2, 0, -1] }],
    ['a cut-off index that is not an integer', { cutoffOf: [-1, 0.5, -1] }],
    ['no hashes', { hashes: undefined }],
    ['no hash key', { hashKey: undefined }],
    ['types that are not text', { types: ['U', '*', 'A'] }],
    ['flags that are not text', { suppressed: [true, false, false] }],
    ['cut-offs that are not a list', { cutoffs: '2026-01-01' }],
    ['cut-off indexes that are not a list', { cutoffOf: '-1,0' }],
    ["an older control plane's list", { hashes: undefined, subjects: [] }],
  ])('refuses %s', (_, change) => {
    expect(wellFormedRecord({ ...good, ...change } as unknown as RegulatedSubjectsRecord)).toBe(false);
  });
});
