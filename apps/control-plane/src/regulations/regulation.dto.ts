import type {
  RegulationStatus,
  RegulationType,
  SubjectType,
  TargetKind,
  TargetStatus,
} from './regulation-types';

/**
 * A regulation to create: Segment's createWorkspaceRegulation body, so its scripts work with
 * the base URL changed (docs/privacy.md, "Moving from Segment").
 */
export interface CreateRegulationBody {
  regulationType: RegulationType;
  subjectType: SubjectType;
  /**
   * The subjects' ids, 1 to 5000 (the same id twice counts once).
   * @minItems 1
   * @maxItems 5000
   */
  subjectIds: SubjectId[];
  /** Answer what the regulation would erase and where, and change nothing. */
  dryRun?: boolean;
}

/**
 * @minLength 1
 * @maxLength 1024
 */
export type SubjectId = string;

export interface RegulationTargetError {
  code: string;
  message: string;
}

/** One place a regulation acts on, with its own status. */
export interface RegulationTargetView {
  /** `warehouse:<id>`, `dead_letters`, `debugger` or `integration:<id>`. */
  target: string;
  kind: TargetKind;
  name: string;
  /** The destination's app type; null for the others. */
  appType: string | null;
  status: TargetStatus;
  /** Steps tried (a batch of rows or of vendor requests each). */
  attempts: number;
  lastError: RegulationTargetError | null;
  updatedAt: string;
}

export interface RegulationView {
  /** @format uuid */
  id: string;
  regulationType: RegulationType;
  subjectType: SubjectType;
  /** Distinct subject ids it names. */
  subjectCount: number;
  overallStatus: RegulationStatus;
  createdAt: string;
  finishedAt: string | null;
  /** Deleting types: events of the subjects received at or before it are erased and never delivered again. */
  cutoff: string | null;
  targets: RegulationTargetView[];
}

/** Segment's answer to createWorkspaceRegulation (`data.regulateId`), with the regulation itself. */
export interface RegulationCreated {
  data: { regulateId: string; regulation: RegulationView };
}

export interface RegulationAnswer {
  data: { regulation: RegulationView };
}

/** What a deleting regulation would erase from one warehouse, per table. */
export interface DryRunWarehouse {
  warehouseId: string;
  name: string;
  rows: { events: number; users: number; groups: number; aliases: number };
}

export interface DryRunDestination {
  /** @format uuid */
  integrationId: string;
  name: string;
  appType: string;
  /** `supported`: the vendor is asked to delete; `credential_missing`: it would fail for want of a credential. */
  deletion: 'supported' | 'not_supported' | 'credential_missing';
}

export interface RegulationDryRun {
  data: {
    dryRun: true;
    regulationType: RegulationType;
    subjectType: SubjectType;
    subjects: number;
    warehouses: DryRunWarehouse[];
    /** Dead letters of the account holding an event of the subjects. */
    deadLetters: number;
    destinations: DryRunDestination[];
  };
}

/** A suppressed subject: by its keyed hash (raw ids are not kept once a regulation finishes). */
export interface SuppressionView {
  /** The regulation that suppressed it. */
  regulateId: string;
  subjectType: SubjectType;
  subjectHash: string;
  since: string;
}
