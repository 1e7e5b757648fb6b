import { randomUUID } from 'node:crypto';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { runOperatorCli } from './operator-cli';

// `cli regulations list` and `show`: every account's regulations as the operator API lists them,
// read from a real control-plane database, with each target's status and never a raw id. Run
// without CREDENTIALS_ENCRYPTION_KEYS: reading the audit needs none.

describe('operator CLI: regulations (real PostgreSQL)', () => {
  let h: Harness;
  let a: Tenant;
  let b: Tenant;
  // Raw ids the output must never carry: Unicode, and one that looks like an option.
  const aliceId = `alice-😀-${randomUUID()}`;
  const bobId = `--bob-ß-${randomUUID()}`;
  let suppressed: string;
  let deleting: string;
  let other: string;

  beforeAll(async () => {
    h = await startHarness('regulations cli');
    a = await h.tenant();
    b = await h.tenant();
    const create = async (tenant: Tenant, regulationType: string, subjectIds: string[]) => {
      const res = await h
        .as(tenant.key)
        .post('/api/v1/regulations')
        .send({ regulationType, subjectType: 'USER_ID', subjectIds });
      expect(res.status).toBe(200);
      return res.body.data.regulateId as string;
    };
    suppressed = await create(a, 'SUPPRESS_ONLY', [aliceId]);
    deleting = await create(a, 'DELETE_INTERNAL', [aliceId, bobId]);
    other = await create(b, 'SUPPRESS_ONLY', [bobId]);
  });
  afterAll(() => h.close());

  async function cli(argv: string[]) {
    let out = '';
    let err = '';
    const code = await runOperatorCli(argv, h.db.dataSource, {
      out: (t) => (out += t),
      err: (t) => (err += t),
    });
    return { code, out, err, json: () => JSON.parse(out) };
  }

  it("lists every account's regulations, newest first, and each account's alone", async () => {
    const all = await cli(['regulations', 'list', '--json']);
    expect(all.code).toBe(0);
    expect(all.json().data.map((r: { id: string }) => r.id)).toEqual([other, deleting, suppressed]);
    expect(all.json().pagination).toMatchObject({ total: 3, limit: 100, offset: 0, nextOffset: null });

    const mine = await cli(['regulations', 'list', '--account', a.accountId, '--json']);
    expect(mine.json().data).toEqual([
      expect.objectContaining({
        id: deleting,
        accountId: a.accountId,
        regulationType: 'DELETE_INTERNAL',
        subjectCount: 2,
      }),
      expect.objectContaining({ id: suppressed, accountId: a.accountId, regulationType: 'SUPPRESS_ONLY' }),
    ]);

    // Human: one line each, with the account, the type, the subjects, the status and the targets.
    const human = await cli(['regulations', 'list', '--account', b.accountId]);
    expect(human.out.trim()).toMatch(
      new RegExp(
        `^${other}  account ${b.accountId}  SUPPRESS_ONLY  1 USER_ID  FINISHED  created \\S+  no targets$`,
      ),
    );
    for (const out of [all.out, mine.out, human.out]) {
      expect(out).not.toContain(aliceId);
      expect(out).not.toContain(bobId);
    }
  });

  it('filters by overall status in any case, and pages', async () => {
    const finished = await cli(['regulations', 'list', '--status', 'finished', '--json']);
    expect(finished.code).toBe(0);
    const ids = finished.json().data.map((r: { id: string; overallStatus: string }) => r.id);
    expect(ids).toEqual(expect.arrayContaining([other, suppressed]));
    expect(finished.json().data.every((r: { overallStatus: string }) => r.overallStatus === 'FINISHED')).toBe(
      true,
    );

    const first = await cli(['regulations', 'list', '--limit', '1']);
    expect(first.out).toContain(`${other}  account ${b.accountId}`);
    expect(first.out.trim().split('\n').at(-1)).toBe('1-1 of 3: --offset 1 for the next');
    const second = await cli(['regulations', 'list', '--limit', '1', '--offset', '1', '--json']);
    expect(second.json().data.map((r: { id: string }) => r.id)).toEqual([deleting]);
  });

  it('shows one regulation of any account with each target', async () => {
    const shown = await cli(['regulations', 'show', deleting, '--json']);
    expect(shown.code).toBe(0);
    const regulation = shown.json() as {
      accountId: string;
      targets: { target: string; name: string; status: string; attempts: number }[];
    };
    expect(regulation.accountId).toBe(a.accountId);
    expect(regulation.targets.map((t) => t.target)).toEqual(
      expect.arrayContaining(['dead_letters', 'debugger', expect.stringMatching(/^warehouse:/)]),
    );

    const human = await cli(['regulations', 'show', deleting]);
    const lines = human.out.trim().split('\n');
    expect(lines[0]).toBe(`regulation ${deleting} of account ${a.accountId}`);
    expect(lines[1]).toMatch(/^ {2}DELETE_INTERNAL, 2 USER_ID subjects, (INITIALIZED|RUNNING|FINISHED)$/);
    expect(lines[2]).toMatch(/^ {2}created \S+, cut-off \S+, finished /);
    // One line per target: its id, name, status and attempts.
    for (const target of regulation.targets)
      expect(lines).toContain(
        `  ${target.target}  ${target.name}  ${target.status}  attempts ${target.attempts}`,
      );
    expect(lines).toHaveLength(3 + regulation.targets.length);
    expect(human.out).not.toContain(aliceId);
  });

  it('refuses what it cannot read: an unknown id, a bad account id, an unknown status', async () => {
    const unknown = await cli(['regulations', 'show', randomUUID()]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/^error: Regulation \S+ was not found \(regulation_not_found\)\n$/);
    const malformed = await cli(['regulations', 'show', 'not-an-id']);
    expect(malformed.code).toBe(1);
    expect(malformed.err).toContain('(regulation_not_found)');

    const account = await cli(['regulations', 'list', '--account', 'nope']);
    expect(account.code).toBe(1);
    expect(account.err).toBe('error: --account must be an account id (a UUID): nope\n');

    const status = await cli(['regulations', 'list', '--status', 'done']);
    expect(status.code).not.toBe(0);
    expect(status.err).toContain('expected one of: INITIALIZED, RUNNING, FINISHED, PARTIAL_SUCCESS, FAILED');
    expect(status.out).toBe('');
  });
});
