// What the Privacy page decides without the API: the ids of its text box, the input a preview was
// made for, what each regulation type does, and how each status is shown (docs/privacy.md).
import type { Regulation, RegulationTarget } from './types';

export type RegulationType = Regulation['regulationType'];
export type SubjectType = Regulation['subjectType'];

/** What each type does: suppresses new events, deletes our copies, forwards to destinations. */
export const TYPES: Record<
  RegulationType,
  { suppresses: boolean; deletes: boolean; forwards: boolean; says: string }
> = {
  SUPPRESS_WITH_DELETE: {
    suppresses: true,
    deletes: true,
    forwards: true,
    says: 'drop new events, delete everywhere, and ask destinations to delete',
  },
  DELETE_ONLY: {
    suppresses: false,
    deletes: true,
    forwards: true,
    says: 'delete events received until now everywhere, destinations too; new events are kept',
  },
  SUPPRESS_WITH_DELETE_INTERNAL: {
    suppresses: true,
    deletes: true,
    forwards: false,
    says: 'drop new events, delete from warehouses and our copies; destinations untouched',
  },
  DELETE_INTERNAL: {
    suppresses: false,
    deletes: true,
    forwards: false,
    says: 'delete from warehouses and our copies only; new events are kept',
  },
  SUPPRESS_ONLY: {
    suppresses: true,
    deletes: false,
    forwards: false,
    says: 'drop new events from now on; delete nothing',
  },
  UNSUPPRESS: {
    suppresses: false,
    deletes: false,
    forwards: false,
    says: 'accept new events again; restores nothing',
  },
};

/** The most ids one call takes (the API answers 400 validation_failed above it). */
export const MAX_IDS = 5000;

/** The ids of the text box: one a line, blank lines skipped, ends trimmed, duplicates once. */
export function idsOf(text: string): string[] {
  return [
    ...new Set(
      text
        .split(/\r\n|\r|\n/)
        .map((line) => line.trim())
        .filter((line) => line.length > 0),
    ),
  ];
}

/** The input a preview was made for: Create is offered only while the form still holds it. */
export function inputKey(type: string, subjectType: string, ids: readonly string[]): string {
  return JSON.stringify([type, subjectType, ids]);
}

export type Tone = 'good' | 'bad' | 'neutral' | 'progress' | 'warn';

/** A target's status as shown: not_supported is neutral (not a failure), forwarded in progress. */
export function targetTone(status: RegulationTarget['status']): Tone {
  switch (status) {
    case 'done':
      return 'good';
    case 'failed':
      return 'bad';
    case 'not_supported':
      return 'neutral';
    default:
      return 'progress';
  }
}

export function overallTone(status: Regulation['overallStatus']): Tone {
  switch (status) {
    case 'FINISHED':
      return 'good';
    case 'FAILED':
      return 'bad';
    case 'PARTIAL_SUCCESS':
      return 'warn';
    default:
      return 'progress';
  }
}

export const TARGET_LABELS: Record<RegulationTarget['status'], string> = {
  not_supported: 'not supported',
  waiting_fence: 'waiting for the backlog',
  pending: 'pending',
  running: 'running',
  forwarded: 'forwarded',
  done: 'done',
  failed: 'failed',
};
