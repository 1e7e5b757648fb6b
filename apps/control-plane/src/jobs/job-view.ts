import { iso, isoOrNull } from '../http/list-query';
import type { JobView } from './job.dto';
import type { AccountJobKind, JobEntity } from './job.entity';
import { shownError } from '../work-queue/tenant-error';

export function toJobView(job: JobEntity): JobView {
  return {
    id: job.id,
    // Only a source's or an integration's jobs are shown (JobService.get filters the kinds).
    kind: job.kind as AccountJobKind,
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
