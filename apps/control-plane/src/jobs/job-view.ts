import { iso, isoOrNull } from '../http/list-query';
import type { JobView } from './job.dto';
import type { JobEntity } from './job.entity';
import { shownError } from '../work-queue/tenant-error';

export function toJobView(job: JobEntity): JobView {
  return {
    id: job.id,
    kind: job.kind,
    status: job.status,
    trigger: job.trigger,
    sourceId: job.sourceId,
    integrationId: job.integrationId,
    rowsRead: job.rowsRead,
    rowsWritten: job.rowsWritten,
    error: shownError(job.error),
    attempts: job.attempts,
    notBefore: job.status === 'queued' && job.runAfter > job.createdAt ? iso(job.runAfter) : null,
    createdAt: iso(job.createdAt),
    startedAt: isoOrNull(job.startedAt),
    finishedAt: isoOrNull(job.finishedAt),
  };
}
