import { hash } from 'node:crypto';

/** Whose events a privacy regulation names: Segment's subject types. */
export type SubjectType = 'USER_ID' | 'ANONYMOUS_ID';
export const subjectTypes: readonly SubjectType[] = ['USER_ID', 'ANONYMOUS_ID'];

/**
 * One regulated subject of an account as every service sees it: a keyed hash, never the id.
 * `suppressed`: its new events are dropped. `deleteCutoff`: an ISO time; its events received
 * at or before it are never written or sent again, wherever they come from.
 */
export interface RegulatedSubject {
  hash: string;
  /** The type the hash was made for; absent: matched as either (an older control plane). */
  type?: SubjectType;
  suppressed: boolean;
  deleteCutoff: string | null;
}

/**
 * An account's regulated subjects, as the control plane answers
 * `POST /internal/v1/regulated-subjects` `{ accountId }` (`{ data: record }`). `hashKey` is the
 * account's hash key (base64); `writeKeyId` is empty, so a TenantCache keyed by account drops
 * the record on the account's `tenant_changed` broadcast, as it does a tenant.
 */
export interface RegulatedSubjectsRecord {
  accountId: string;
  writeKeyId: '';
  hashKey: string;
  subjects: RegulatedSubject[];
}

/** The identifiers of an event a regulation can name. */
export interface EventIdentity {
  userId?: unknown;
  anonymousId?: unknown;
  previousId?: unknown;
}

export type RegulationDecision = 'suppressed' | 'deleted' | null;

/**
 * The keyed hashes of one account's subject ids: SHA-256 of the account's key (base64), a
 * newline and `<type>:<id>`, first 22 base64url characters (132 bits). Keyed so that a cache,
 * Redis or a log holding one cannot be reversed by hashing guessed emails; per account so that
 * two accounts' hashes of one id differ. A secret prefix is a sound keyed hash here because the
 * output is truncated (a length extension needs the whole state) and the key has a fixed length;
 * one one-shot hash of a string costs about 0.5 µs, where createHmac costs 6 µs, and the door
 * pays it for every identifier of every event of an account that has regulations.
 */
export class SubjectHasher {
  private readonly prefix: string;

  constructor(key: Buffer) {
    this.prefix = `${key.toString('base64')}\n`;
  }

  hash(type: SubjectType, id: string): string {
    return hash('sha256', `${this.prefix}${type}:${id}`, 'base64url').slice(0, 22);
  }
}

/** The keyed hash of one subject id (SubjectHasher), for the control plane's cold paths. */
export function subjectHash(key: Buffer, type: SubjectType, id: string): string {
  return new SubjectHasher(key).hash(type, id);
}

interface Rule {
  suppressed: boolean;
  /** The deletion cut-off; NaN for none, which no time is at or before. */
  cutoffMs: number;
}

/**
 * An account's regulated subjects ready to decide events. An account with none decides without
 * hashing, which is the common case at the door.
 */
export class RegulatedSubjects {
  private readonly rules = new Map<string, Rule>();
  private readonly hasher: SubjectHasher;
  /** Which types have subjects: an identifier of a type none has is not hashed. */
  private readonly types = new Set<SubjectType>();

  constructor(record: Pick<RegulatedSubjectsRecord, 'hashKey' | 'subjects'>) {
    this.hasher = new SubjectHasher(Buffer.from(record.hashKey, 'base64'));
    for (const subject of record.subjects) {
      for (const type of subject.type ? [subject.type] : subjectTypes) this.types.add(type);
      this.rules.set(subject.hash, {
        suppressed: subject.suppressed,
        // Stryker disable next-line StringLiteral: Date.parse of any text that is not a time is NaN
        cutoffMs: Date.parse(subject.deleteCutoff ?? ''),
      });
    }
  }

  get size(): number {
    return this.rules.size;
  }

  /**
   * Whether an event received at `receivedAtMs` must be dropped: `suppressed` when a subject it
   * carries is suppressed, `deleted` when it was received at or before a subject's deletion
   * cut-off, null otherwise. A user id, an anonymous id and an alias's previous id (either kind)
   * each name the subject.
   */
  decide(event: EventIdentity, receivedAtMs: number): RegulationDecision {
    // Stryker disable next-line ConditionalExpression: without subjects nothing matches; this saves the hashes
    if (this.rules.size === 0) return null;
    let decision: RegulationDecision = null;
    const consider = (type: SubjectType, id: unknown) => {
      // Stryker disable next-line ConditionalExpression,BooleanLiteral: a type without subjects matches nothing; this saves the hash
      if (!this.types.has(type)) return;
      if (typeof id !== 'string' || id === '' || decision === 'suppressed') return;
      const rule = this.rules.get(this.hasher.hash(type, id));
      if (!rule) return;
      if (rule.suppressed) decision = 'suppressed';
      else if (receivedAtMs <= rule.cutoffMs) decision = 'deleted';
    };
    consider('USER_ID', event.userId);
    consider('ANONYMOUS_ID', event.anonymousId);
    consider('USER_ID', event.previousId);
    consider('ANONYMOUS_ID', event.previousId);
    return decision;
  }
}
