import { randomUUID } from 'node:crypto';
import { RegulatedSubjects, subjectHash, type RegulatedSubjectsRecord } from '@pipeline/tenancy';
import request from 'supertest';
import { startHarness, TEST_INTERNAL_TOKEN, type Harness, type Tenant } from '../testing/harness';

const OPERATOR_TOKEN = `op-${randomUUID()}`;

// The regulations API against a real control plane and PostgreSQL: what each type changes at
// once (the subjects' suppression and cut-off that every service decides events by), the
// targets a deleting type plans, the audit record without raw ids, and bad input answered with
// the documented 4xx and nothing changed.

interface Regulation {
  id: string;
  regulationType: string;
  subjectType: string;
  subjectCount: number;
  overallStatus: string;
  createdAt: string;
  finishedAt: string | null;
  cutoff: string | null;
  targets: { target: string; kind: string; status: string; appType: string | null }[];
}

describe('regulations API (real PostgreSQL)', () => {
  let h: Harness;
  let a: Tenant;
  let b: Tenant;

  beforeAll(async () => {
    h = await startHarness('regulations', {
      regulationLimits: { subjectsPerMonth: 5_010 },
      operatorToken: OPERATOR_TOKEN,
    });
    a = await h.tenant();
    b = await h.tenant();
  });
  afterAll(() => h.close());

  const create = (tenant: Tenant, body: Record<string, unknown>) =>
    h.as(tenant.key).post('/api/v1/regulations').send(body);
  const record = (accountId: string) =>
    h
      .as(TEST_INTERNAL_TOKEN)
      .post('/internal/v1/regulated-subjects')
      .send({ accountId })
      .expect(200)
      .then((res) => new RegulatedSubjects(res.body.data as RegulatedSubjectsRecord));
  const count = async (accountId: string) =>
    Number(
      (
        (await h.db.dataSource.query('SELECT count(*) AS n FROM regulations WHERE account_id = $1', [
          accountId,
        ])) as { n: string }[]
      )[0]?.n,
    );

  it('suppresses at once: finished, listed by hash, decided by the internal record, then lifted', async () => {
    const user = `user-${randomUUID()}`;
    const before = await record(a.accountId);
    expect(before.decide({ userId: user }, Date.now())).toBeNull();

    const res = await create(a, {
      regulationType: 'SUPPRESS_ONLY',
      subjectType: 'USER_ID',
      subjectIds: [user, user],
    });
    expect(res.status).toBe(200);
    const regulation = res.body.data.regulation as Regulation;
    expect(res.body.data.regulateId).toBe(regulation.id);
    expect(regulation).toMatchObject({
      regulationType: 'SUPPRESS_ONLY',
      subjectType: 'USER_ID',
      subjectCount: 1,
      overallStatus: 'FINISHED',
      cutoff: null,
      targets: [],
    });
    expect(regulation.finishedAt).not.toBeNull();

    const after = await record(a.accountId);
    expect(after.decide({ userId: user }, Date.now() + 3_600_000)).toBe('suppressed');
    expect(after.decide({ anonymousId: user }, Date.now())).toBeNull();
    // Another account with the same id is not touched.
    expect((await record(b.accountId)).decide({ userId: user }, Date.now())).toBeNull();

    const listed = await h
      .as(a.key)
      .get(`/api/v1/suppressions?subjectType=USER_ID&subjectId=${encodeURIComponent(user)}`)
      .expect(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({ regulateId: regulation.id, subjectType: 'USER_ID' });
    expect(JSON.stringify(listed.body)).not.toContain(user);

    const lifted = await h.as(a.key).delete(`/api/v1/suppressions/${regulation.id}`).expect(200);
    expect(lifted.body.data.regulation).toMatchObject({
      regulationType: 'UNSUPPRESS',
      subjectCount: 1,
      overallStatus: 'FINISHED',
    });
    expect((await record(a.accountId)).decide({ userId: user }, Date.now())).toBeNull();
    const again = await h.as(a.key).delete(`/api/v1/suppressions/${regulation.id}`).expect(409);
    expect(again.body.code).toBe('not_suppressed');
    const none = await h
      .as(a.key)
      .get(`/api/v1/suppressions?subjectType=USER_ID&subjectId=${encodeURIComponent(user)}`)
      .expect(200);
    expect(none.body.data).toEqual([]);
  });

  it('plans the targets of a deleting type and sets its cut-off; DELETE_ONLY keeps later events', async () => {
    const user = `user-${randomUUID()}`;
    const res = await create(a, {
      regulationType: 'DELETE_ONLY',
      subjectType: 'ANONYMOUS_ID',
      subjectIds: [user],
    });
    expect(res.status).toBe(200);
    const regulation = res.body.data.regulation as Regulation;
    expect(regulation.overallStatus).toBe('RUNNING');
    expect(regulation.finishedAt).toBeNull();
    expect(regulation.targets.map((t) => [t.kind, t.status])).toEqual([
      ['dead_letters', 'waiting_fence'],
      ['debugger', 'waiting_fence'],
      ['warehouse', 'waiting_fence'],
    ]);
    const cutoff = Date.parse(regulation.cutoff ?? '');
    expect(Number.isNaN(cutoff)).toBe(false);
    const decided = await record(a.accountId);
    expect(decided.decide({ anonymousId: user }, cutoff)).toBe('deleted');
    expect(decided.decide({ anonymousId: user }, cutoff + 1)).toBeNull();
    expect(decided.decide({ userId: 'x', previousId: user }, cutoff - 1)).toBe('deleted');

    const got = await h.as(a.key).get(`/api/v1/regulations/${regulation.id}`).expect(200);
    expect(got.body.data.regulation).toEqual(regulation);

    // The raw ids are sealed in the row, never stored or logged in clear.
    const [row] = (await h.db.dataSource.query('SELECT * FROM regulations WHERE id = $1', [
      regulation.id,
    ])) as Record<string, unknown>[];
    expect(row?.sealed_subjects).toEqual(expect.any(String));
    expect(JSON.stringify(row)).not.toContain(user);
    expect(h.logs.join('')).not.toContain(user);
    expect(await h.services.regulations.service.sealedSubjects(regulation.id)).toEqual([user]);
  });

  it('lists with filters and pages; another account sees none of it', async () => {
    const page = await h
      .as(a.key)
      .get('/api/v1/regulations?regulationType=SUPPRESS_ONLY&limit=1')
      .expect(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0].regulationType).toBe('SUPPRESS_ONLY');
    expect(page.body.pagination).toMatchObject({ total: 1, limit: 1, offset: 0, nextOffset: null });
    const running = await h.as(a.key).get('/api/v1/regulations?status=RUNNING').expect(200);
    expect(running.body.data.map((r: Regulation) => r.regulationType)).toEqual(['DELETE_ONLY']);
    const all = await h.as(a.key).get('/api/v1/regulations').expect(200);
    const other = await h.as(b.key).get(`/api/v1/regulations/${all.body.data[0].id}`).expect(404);
    expect(other.body.code).toBe('regulation_not_found');
    expect((await h.as(b.key).get('/api/v1/regulations').expect(200)).body.data).toEqual([]);
    expect((await h.as(a.key).get('/api/v1/regulations/not-a-uuid').expect(404)).body.code).toBe(
      'regulation_not_found',
    );
    expect(
      (await h.as(b.key).delete(`/api/v1/suppressions/${all.body.data[0].id}`).expect(404)).body.code,
    ).toBe('regulation_not_found');
  });

  it.each([
    [
      '5,001 ids',
      {
        regulationType: 'SUPPRESS_ONLY',
        subjectType: 'USER_ID',
        subjectIds: Array.from({ length: 5001 }, (_, i) => `u${i}`),
      },
    ],
    ['an unknown type', { regulationType: 'DELETE_EVERYTHING', subjectType: 'USER_ID', subjectIds: ['u'] }],
    ['an unknown subject type', { regulationType: 'SUPPRESS_ONLY', subjectType: 'EMAIL', subjectIds: ['u'] }],
    ['no ids', { regulationType: 'SUPPRESS_ONLY', subjectType: 'USER_ID', subjectIds: [] }],
    ['an empty id', { regulationType: 'SUPPRESS_ONLY', subjectType: 'USER_ID', subjectIds: [''] }],
    [
      'an id over 1024 characters',
      { regulationType: 'SUPPRESS_ONLY', subjectType: 'USER_ID', subjectIds: ['x'.repeat(1025)] },
    ],
    [
      'an unknown field',
      { regulationType: 'SUPPRESS_ONLY', subjectType: 'USER_ID', subjectIds: ['u'], scope: 'all' },
    ],
  ])('refuses %s with 400 validation_failed and changes nothing', async (_, body) => {
    const before = await count(b.accountId);
    const res = await create(b, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(await count(b.accountId)).toBe(before);
  });

  it("takes Segment's own media type, as its Public API clients send it", async () => {
    const res = await h
      .as(b.key)
      .post('/api/v1/regulations')
      .set('Content-Type', 'application/vnd.segment.v1+json')
      .send(
        JSON.stringify({
          regulationType: 'SUPPRESS_ONLY',
          subjectType: 'USER_ID',
          subjectIds: ['segment-user'],
        }),
      );
    expect(res.status).toBe(200);
    expect(res.body.data.regulation).toMatchObject({ regulationType: 'SUPPRESS_ONLY', subjectCount: 1 });
  });

  it('needs its scopes', async () => {
    const reader = await b.keyWith(['regulations.read']);
    const res = await h
      .as(reader)
      .post('/api/v1/regulations')
      .send({ regulationType: 'SUPPRESS_ONLY', subjectType: 'USER_ID', subjectIds: ['u'] });
    expect(res.status).toBe(403);
    await h.as(reader).get('/api/v1/regulations').expect(200);
    const none = await b.keyWith(['apps.read']);
    expect((await h.as(none).get('/api/v1/suppressions')).status).toBe(403);
  });

  it('counts ids against the monthly quota (UNSUPPRESS excepted) and refuses past it with 429', async () => {
    const c = await h.tenant();
    const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);
    await create(c, {
      regulationType: 'SUPPRESS_ONLY',
      subjectType: 'USER_ID',
      subjectIds: ids(5000, 'a'),
    }).expect(200);
    await create(c, {
      regulationType: 'UNSUPPRESS',
      subjectType: 'USER_ID',
      subjectIds: ids(5000, 'a'),
    }).expect(200);
    await create(c, {
      regulationType: 'SUPPRESS_ONLY',
      subjectType: 'USER_ID',
      subjectIds: ids(10, 'b'),
    }).expect(200);
    const before = await count(c.accountId);
    const refused = await create(c, {
      regulationType: 'SUPPRESS_ONLY',
      subjectType: 'USER_ID',
      subjectIds: ['one-more'],
    });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('regulation_quota_exceeded');
    expect(await count(c.accountId)).toBe(before);
    const decided = await record(c.accountId);
    expect(decided.decide({ userId: 'one-more' }, Date.now())).toBeNull();
    expect(decided.decide({ userId: 'b-3' }, Date.now())).toBe('suppressed');
    expect(decided.decide({ userId: 'a-3' }, Date.now())).toBeNull();
  });

  it('answers the internal record only to internal tokens, empty for an unknown account', async () => {
    expect(
      (await h.as(a.key).post('/internal/v1/regulated-subjects').send({ accountId: a.accountId })).status,
    ).toBe(401);
    const unknown = await h
      .as(TEST_INTERNAL_TOKEN)
      .post('/internal/v1/regulated-subjects')
      .send({ accountId: 'not-an-account' })
      .expect(200);
    expect(unknown.body.data).toMatchObject({
      hashes: '',
      types: '',
      suppressed: '',
      cutoffs: [],
      cutoffOf: [],
    });
    const known = await h
      .as(TEST_INTERNAL_TOKEN)
      .post('/internal/v1/regulated-subjects')
      .send({ accountId: a.accountId })
      .expect(200);
    const key = Buffer.from(known.body.data.hashKey as string, 'base64');
    expect(key).toHaveLength(32);
    // Hashes only, as columns: the account's regulated subjects, each the keyed hash the services compute.
    const data = known.body.data as RegulatedSubjectsRecord;
    const hashes = data.hashes.match(/.{22}/g) ?? [];
    expect(hashes.join('')).toBe(data.hashes);
    const stored = (await h.db.dataSource.query(
      `SELECT subject_hash FROM regulation_subjects
        WHERE account_id = $1 AND (suppressed OR delete_cutoff IS NOT NULL)`,
      [a.accountId],
    )) as { subject_hash: string }[];
    expect(stored.length).toBeGreaterThan(0);
    expect([...hashes].sort()).toEqual(stored.map((row) => row.subject_hash).sort());
    for (const hash of hashes) expect(hash).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect([data.types.length, data.suppressed.length, data.cutoffOf.length]).toEqual([
      hashes.length,
      hashes.length,
      hashes.length,
    ]);
    expect(subjectHash(key, 'USER_ID', 'x')).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('lists every account regulations for the operator, on the operator listener only', async () => {
    const operator = (path: string) =>
      request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
    const all = await operator('/api/v1/operator/regulations?limit=100').expect(200);
    const accounts = new Set((all.body.data as { accountId: string }[]).map((r) => r.accountId));
    expect(accounts.has(a.accountId)).toBe(true);
    const mine = await operator(`/api/v1/operator/regulations?accountId=${a.accountId}`).expect(200);
    expect((mine.body.data as { accountId: string }[]).every((r) => r.accountId === a.accountId)).toBe(true);
    expect(mine.body.pagination.total).toBe(await count(a.accountId));
    const first = (mine.body.data as { id: string }[])[0];
    const one = await operator(`/api/v1/operator/regulations/${first?.id}`).expect(200);
    expect(one.body.data.regulation.accountId).toBe(a.accountId);
    expect((await operator('/api/v1/operator/regulations?accountId=nope').expect(400)).body.code).toBe(
      'validation_failed',
    );
    await request(h.operatorApp).get('/api/v1/operator/regulations').expect(401);
    await h.as(a.key).get('/api/v1/operator/regulations').expect(404);
  });
});
