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

/** Subjects as a list, as the control plane's own code and tests hold them. */
export interface RegulatedSubjectList {
  hashKey: string;
  subjects: readonly RegulatedSubject[];
}

/** Characters of a subject hash (SubjectHasher): 132 bits in base64url. */
export const SUBJECT_HASH_LENGTH = 22;

/**
 * An account's regulated subjects, as the control plane answers
 * `POST /internal/v1/regulated-subjects` `{ accountId }` (`{ data: record }`). `hashKey` is the
 * account's hash key (base64); `writeKeyId` is empty, so a TenantCache keyed by account drops
 * the record on the account's `tenant_changed` broadcast, as it does a tenant.
 *
 * The subjects come as columns, not as an object each: 100,000 of them are then about 2.7 MB
 * of JSON that parses into a few strings and arrays, where a list was 6.5 MB parsing into
 * 100,000 objects at every refresh of every ingestion and delivery process.
 */
export interface RegulatedSubjectsRecord {
  accountId: string;
  writeKeyId: '';
  hashKey: string;
  /** Each subject's keyed hash, SUBJECT_HASH_LENGTH characters each, one after the other. */
  hashes: string;
  /** Each subject's type, a character each: `U` USER_ID, `A` ANONYMOUS_ID, `*` either. */
  types: string;
  /** A character each: `1` suppressed, `0` not. */
  suppressed: string;
  /** The distinct deletion cut-offs, ISO times. */
  cutoffs: string[];
  /** Each subject's cut-off: an index into `cutoffs`, -1 for none. */
  cutoffOf: number[];
}

const typeLetters: Record<SubjectType, string> = { USER_ID: 'U', ANONYMOUS_ID: 'A' };
/** Not base64url at all: decodes to no byte. */
const NOT_A_HASH = '.'.repeat(SUBJECT_HASH_LENGTH);

/** The record's subject columns of a list of subjects. */
export function subjectColumns(
  subjects: readonly RegulatedSubject[],
): Pick<RegulatedSubjectsRecord, 'hashes' | 'types' | 'suppressed' | 'cutoffs' | 'cutoffOf'> {
  const cutoffs = new Map<string, number>();
  const cutoffOf = subjects.map((subject) => {
    if (subject.deleteCutoff === null) return -1;
    let index = cutoffs.get(subject.deleteCutoff);
    if (index === undefined) {
      index = cutoffs.size;
      cutoffs.set(subject.deleteCutoff, index);
    }
    return index;
  });
  return {
    // A hash of another length is no hash this class made: a column of it that decodes to
    // nothing keeps the others in place, and matches no id.
    hashes: subjects
      .map((subject) => (subject.hash.length === SUBJECT_HASH_LENGTH ? subject.hash : NOT_A_HASH))
      .join(''),
    types: subjects.map((subject) => (subject.type ? typeLetters[subject.type] : '*')).join(''),
    suppressed: subjects.map((subject) => (subject.suppressed ? '1' : '0')).join(''),
    cutoffs: [...cutoffs.keys()],
    cutoffOf,
  };
}

/**
 * Whether a record's columns agree: every hash SUBJECT_HASH_LENGTH long, one type, flag and
 * cut-off per subject, each cut-off index in range. What fails is not a record to decide by.
 */
export function wellFormedRecord(record: RegulatedSubjectsRecord): boolean {
  if (typeof record.hashKey !== 'string' || typeof record.hashes !== 'string') return false;
  const count = record.hashes.length / SUBJECT_HASH_LENGTH;
  return (
    Number.isInteger(count) &&
    typeof record.types === 'string' &&
    record.types.length === count &&
    typeof record.suppressed === 'string' &&
    record.suppressed.length === count &&
    Array.isArray(record.cutoffs) &&
    Array.isArray(record.cutoffOf) &&
    record.cutoffOf.length === count &&
    record.cutoffOf.every(
      (index) => index === -1 || (Number.isInteger(index) && index >= 0 && index < record.cutoffs.length),
    )
  );
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

  /** The digest `hash` is the text of: its first HASH_BYTES bytes are what a lookup compares. */
  digest(type: SubjectType, id: string): Buffer {
    return hash('sha256', `${this.prefix}${type}:${id}`, 'buffer');
  }
}

/** Bytes of a subject's keyed hash a lookup compares: the first 128 of its 132 bits. */
const HASH_BYTES = 16;

/** The keyed hash of one subject id (SubjectHasher), for the control plane's cold paths. */
export function subjectHash(key: Buffer, type: SubjectType, id: string): string {
  return new SubjectHasher(key).hash(type, id);
}

/**
 * Identifiers an account's RegulatedSubjects remembers with what their hash found, cleared whole
 * when full. A browser sends its visitor's ids in batch after batch, so most identifiers the door
 * sees were seen moments ago; remembering them spares the keyed hash, which is most of the door's
 * cost. Counted per type; 10,000 short ids take about 1.5 MB, and only accounts with subjects
 * keep any.
 */
export const REMEMBERED_IDENTIFIERS = 10_000;

/** What a remembered identifier found: no subject. */
const NONE = -1;

/**
 * An account's regulated subjects ready to decide events. An account with none decides without
 * hashing, which is the common case at the door.
 *
 * The subjects are kept in typed arrays, not as a Map of strings to objects: an account with
 * 100,000 of them then holds a few MB the garbage collector never walks, where a Map held about
 * 15 MB of small objects that every full collection of a busy ingestion process marked again
 * (measured: 2.8% more of its CPU in GC). The hashes sit in an open-addressing table keyed by
 * their first bytes, which are uniformly random.
 */
export class RegulatedSubjects {
  private readonly hasher: SubjectHasher;
  /** Which types have subjects: an identifier of a type none has is not hashed. */
  private readonly types = new Set<SubjectType>();
  /** HASH_BYTES per subject, in the order they were added. */
  private readonly hashes: Uint8Array;
  private readonly suppressed: Uint8Array;
  /** The deletion cut-off of each subject; NaN for none, which no time is at or before. */
  private readonly cutoffs: Float64Array;
  /** Slots of the table: a subject's index + 1, 0 for an empty slot; the length a power of two. */
  private readonly slots: Int32Array;
  private count = 0;
  /** Per type, an id to the index of the subject its hash found, NONE for none (REMEMBERED_IDENTIFIERS each). */
  private readonly remembered: Record<SubjectType, Map<string, number>> = {
    USER_ID: new Map(),
    ANONYMOUS_ID: new Map(),
  };

  /** From the control plane's record (its columns), or from a list of subjects. */
  constructor(
    record: RegulatedSubjectsRecord | RegulatedSubjectList,
    private readonly rememberedLimit = REMEMBERED_IDENTIFIERS,
  ) {
    this.hasher = new SubjectHasher(Buffer.from(record.hashKey, 'base64'));
    const columns = 'subjects' in record ? subjectColumns(record.subjects) : record;
    const total = columns.cutoffOf.length;
    this.hashes = new Uint8Array(total * HASH_BYTES);
    this.suppressed = new Uint8Array(total);
    this.cutoffs = new Float64Array(total);
    // At most half full, so that a probe ends after a slot or two.
    let capacity = 2;
    // Stryker disable next-line EqualityOperator: a table twice as large decides the same, only roomier
    while (capacity < total * 2) capacity *= 2;
    this.slots = new Int32Array(capacity);
    const cutoffTimes = columns.cutoffs.map((cutoff) => Date.parse(cutoff));
    // Stryker disable next-line EqualityOperator: one more turn reads an empty hash, which is skipped
    for (let subject = 0; subject < total; subject += 1) {
      const text = columns.hashes.slice(subject * SUBJECT_HASH_LENGTH, (subject + 1) * SUBJECT_HASH_LENGTH);
      const bytes = Buffer.from(text, 'base64url');
      // Not a hash this class made: nothing hashes to it.
      if (bytes.length < HASH_BYTES) continue;
      const letter = columns.types[subject];
      if (letter !== 'A') this.types.add('USER_ID');
      if (letter !== 'U') this.types.add('ANONYMOUS_ID');
      let index = this.find(bytes);
      if (index === NONE) {
        index = this.count;
        this.count += 1;
        this.hashes.set(bytes.subarray(0, HASH_BYTES), index * HASH_BYTES);
        this.slots[this.emptySlotFor(bytes)] = index + 1;
      }
      // The same subject twice: the later entry's rule holds, as the record lists them.
      this.suppressed[index] = columns.suppressed[subject] === '1' ? 1 : 0;
      // NaN for none (or a cut-off that is not a time): no time is at or before it.
      this.cutoffs[index] = cutoffTimes[columns.cutoffOf[subject] as number] ?? NaN;
    }
  }

  get size(): number {
    return this.count;
  }

  /**
   * Whether an event received at `receivedAtMs` must be dropped: `suppressed` when a subject it
   * carries is suppressed, `deleted` when it was received at or before a subject's deletion
   * cut-off, null otherwise. A user id, an anonymous id and an alias's previous id (either kind)
   * each name the subject.
   */
  decide(event: EventIdentity, receivedAtMs: number): RegulationDecision {
    // Stryker disable next-line ConditionalExpression: without subjects nothing matches; this saves the hashes
    if (this.count === 0) return null;
    const byUser = this.decideOne('USER_ID', event.userId, receivedAtMs);
    if (byUser === 'suppressed') return byUser;
    const byAnonymous = this.decideOne('ANONYMOUS_ID', event.anonymousId, receivedAtMs);
    if (byAnonymous === 'suppressed') return byAnonymous;
    const byPreviousUser = this.decideOne('USER_ID', event.previousId, receivedAtMs);
    if (byPreviousUser === 'suppressed') return byPreviousUser;
    const byPreviousAnonymous = this.decideOne('ANONYMOUS_ID', event.previousId, receivedAtMs);
    return byPreviousAnonymous ?? byPreviousUser ?? byAnonymous ?? byUser;
  }

  private decideOne(type: SubjectType, id: unknown, receivedAtMs: number): RegulationDecision {
    // Stryker disable next-line ConditionalExpression: a type without subjects matches nothing; this saves the hash
    if (typeof id !== 'string' || id === '' || !this.types.has(type)) return null;
    const index = this.subjectOf(type, id);
    // Stryker disable next-line ConditionalExpression: index -1 reads undefined flags, which decide null as well; this says it
    if (index === NONE) return null;
    if (this.suppressed[index] === 1) return 'suppressed';
    return receivedAtMs <= (this.cutoffs[index] as number) ? 'deleted' : null;
  }

  private subjectOf(type: SubjectType, id: string): number {
    // A map per type, keyed by the id itself: no key to build for each identifier.
    const remembered = this.remembered[type];
    let index = remembered.get(id);
    if (index === undefined) {
      index = this.find(this.hasher.digest(type, id));
      if (remembered.size >= this.rememberedLimit) remembered.clear();
      remembered.set(id, index);
    }
    return index;
  }

  /** The index of the subject whose hash begins with `bytes`' first HASH_BYTES, or NONE. */
  private find(bytes: Uint8Array): number {
    const mask = this.slots.length - 1;
    for (let slot = this.slotOf(bytes); ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot] as number;
      if (entry === 0) return NONE;
      if (this.sameHash(entry - 1, bytes)) return entry - 1;
    }
  }

  private emptySlotFor(bytes: Uint8Array): number {
    const mask = this.slots.length - 1;
    let slot = this.slotOf(bytes);
    while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
    return slot;
  }

  private slotOf(bytes: Uint8Array): number {
    // The first four bytes of a SHA-256 are uniform: they spread the subjects evenly.
    return (
      (((bytes[0] as number) << 24) |
        ((bytes[1] as number) << 16) |
        ((bytes[2] as number) << 8) |
        (bytes[3] as number)) &
      (this.slots.length - 1)
    );
  }

  private sameHash(index: number, bytes: Uint8Array): boolean {
    const at = index * HASH_BYTES;
    for (let i = 0; i < HASH_BYTES; i += 1) if (this.hashes[at + i] !== bytes[i]) return false;
    return true;
  }
}
