import { toJobView } from './job-view';
import type { JobEntity } from './job.entity';

const created = new Date('2026-03-04T05:00:00.000Z');
// A plain object: the entity class would load TypeORM into every mutant run.
const job = (fields: Partial<JobEntity>): JobEntity => ({
  id: '3f0c1d2e-1111-4a7e-9d0b-3a1f2c4b5e6f',
  accountId: '5d1f2c3b-0000-4000-8000-000000000001',
  sourceId: '7d3c1d2e-5f5a-4d7e-9d0b-3a1f2c4b5e6f',
  integrationId: null,
  kind: 'source_sync',
  trigger: 'manual',
  status: 'queued',
  rowsRead: 10,
  rowsWritten: 8,
  error: null,
  attempts: 1,
  createdAt: created,
  startedAt: null,
  finishedAt: null,
  runAfter: created,
  ...fields,
});

describe('toJobView', () => {
  it('answers a job as stored, with no wait before a fresh queued one', () => {
    expect(toJobView(job({}))).toEqual({
      id: '3f0c1d2e-1111-4a7e-9d0b-3a1f2c4b5e6f',
      kind: 'source_sync',
      status: 'queued',
      trigger: 'manual',
      sourceId: '7d3c1d2e-5f5a-4d7e-9d0b-3a1f2c4b5e6f',
      integrationId: null,
      rowsRead: 10,
      rowsWritten: 8,
      error: null,
      attempts: 1,
      notBefore: null,
      createdAt: '2026-03-04T05:00:00.000Z',
      startedAt: null,
      finishedAt: null,
    });
  });

  it('names when a queued job waiting for its retry may run, and only for a queued job', () => {
    const later = new Date('2026-03-04T05:01:00.000Z');
    expect(toJobView(job({ runAfter: later })).notBefore).toBe('2026-03-04T05:01:00.000Z');
    expect(toJobView(job({ runAfter: later, status: 'running' })).notBefore).toBeNull();
    expect(toJobView(job({ runAfter: new Date('2026-03-04T04:59:00.000Z') })).notBefore).toBeNull();
  });

  it('answers the times of a finished job, and withholds an internal error', () => {
    const view = toJobView(
      job({
        status: 'failed',
        startedAt: new Date('2026-03-04T05:00:01.000Z'),
        finishedAt: new Date('2026-03-04T05:00:02.000Z'),
        error: { code: 'stripe_unauthorized', message: 'stripe answered 401' },
      }),
    );
    expect([view.startedAt, view.finishedAt, view.error]).toEqual([
      '2026-03-04T05:00:01.000Z',
      '2026-03-04T05:00:02.000Z',
      { code: 'stripe_unauthorized', message: 'stripe answered 401' },
    ]);
    expect(toJobView(job({ error: { message: 'connect ECONNREFUSED 10.0.3.7:5432' } })).error).toEqual({
      code: 'internal_error',
      message: 'An internal error occurred',
    });
  });
});
