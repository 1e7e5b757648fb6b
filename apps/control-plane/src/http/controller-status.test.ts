import { startHarness, type Harness } from '../testing/harness';

// tsoa keeps an answer's status on the controller object, which the app shares between
// requests: a create's 201 must never become the status of a read in flight beside it.
describe('answer statuses of concurrent requests (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('controller status');
  });
  afterAll(() => h.close());

  it('gives each request its own status', async () => {
    const tenant = await h.tenant();
    const as = h.as(tenant.key);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => [
        as.post('/api/v1/write-keys').send({ name: `site ${i}` }),
        as.get('/api/v1/write-keys'),
      ]).flat(),
    );
    expect(answers.map((answer) => answer.status)).toEqual(
      Array.from({ length: 10 }, () => [201, 200]).flat(),
    );
  });
});
