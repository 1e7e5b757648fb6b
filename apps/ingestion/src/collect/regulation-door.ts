import type { TrackingEvent } from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import {
  ControlPlaneUnavailable,
  decideEach,
  type RegulatedSubjects,
  type RegulatedSubjectsCache,
} from '@pipeline/tenancy';

/** How often at most the door says, per account, that it accepted without reading regulations. */
export const UNREADABLE_LOG_INTERVAL_MS = 60_000;
/** Accounts remembered for that; beyond, all are forgotten (a log line more each, nothing worse). */
const MAX_LOGGED_ACCOUNTS = 10_000;

/**
 * The door of hosted ingestion for privacy regulations (docs/tracking-api.md, "Suppressed
 * subjects"): which events of a request a regulation of its account names, to be answered as
 * accepted and never committed. When the account's subjects cannot be read the door lets
 * everything in (the consumers take regulated events out before every delivery, and hold rather
 * than deliver when they cannot read them either) and says so at most once a minute per account.
 */
export class RegulationDoor {
  private readonly loggedAt = new Map<string, number>();

  constructor(
    private readonly subjects: Pick<RegulatedSubjectsCache, 'peek' | 'forAccount'>,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly maxLoggedAccounts = MAX_LOGGED_ACCOUNTS,
  ) {}

  /**
   * The indexes in `events` of those a regulation names (ascending), for events received at
   * `receivedAt`; empty when none are, or when the account's subjects cannot be read.
   */
  async regulated(accountId: string, events: readonly TrackingEvent[], receivedAt: Date): Promise<number[]> {
    // The cached answer without a promise: most requests of an account find it.
    const subjects = this.subjects.peek(accountId) ?? (await this.read(accountId));
    // Stryker disable next-line ConditionalExpression: decideEach answers null for each event of an account without subjects; this spares the array
    if (!subjects || subjects.size === 0) return [];
    const indexes: number[] = [];
    decideEach(subjects, events, receivedAt.getTime()).forEach((decision, index) => {
      if (decision !== null) indexes.push(index);
    });
    return indexes;
  }

  private async read(accountId: string): Promise<RegulatedSubjects | undefined> {
    try {
      return await this.subjects.forAccount(accountId);
    } catch (error) {
      if (!(error instanceof ControlPlaneUnavailable)) throw error;
      const now = this.now();
      const last = this.loggedAt.get(accountId);
      if (last === undefined || now - last >= UNREADABLE_LOG_INTERVAL_MS) {
        if (this.loggedAt.size >= this.maxLoggedAccounts) this.loggedAt.clear();
        this.loggedAt.set(accountId, now);
        this.logger.warn('regulated subjects cannot be read; accepting events unfiltered', {
          accountId,
          error: error.message,
        });
      }
      return undefined;
    }
  }
}
