/** One stream a connector can read: a warehouse table of the source, upserted on its key. */
export interface StreamSpec {
  name: string;
  /** The field each record is upserted on. */
  primaryKey: string;
  /** The field incremental reads advance on. */
  cursorField: string;
}

export type SourceRecord = Record<string, unknown>;

/** A page of a stream, with the cursor to save once its records are loaded. */
export interface StreamPage {
  records: SourceRecord[];
  /** The cursor after this page: resuming from it reads nothing this page already gave. */
  cursor: string | null;
}

export interface ReadOptions {
  /** Saved by the last successful read; null reads from the beginning (bounded by startDate). */
  cursor: string | null;
  /** `historicalSyncStartDate`: the first read takes nothing older. */
  startDate?: Date;
  /** `rollingPeriodHours`: re-read this trailing window before the cursor, for late updates. */
  rollingPeriodHours?: number;
  signal?: AbortSignal;
}

/** A source platform's public API, read stream by stream. */
export interface Connector {
  readonly appType: string;
  readonly streams: readonly StreamSpec[];
  /** Resolves when the credentials are accepted; throws ConnectorError otherwise. */
  check(signal?: AbortSignal): Promise<void>;
  /** The stream's records changed since the cursor, page by page. */
  read(stream: string, options: ReadOptions): AsyncIterable<StreamPage>;
}

/**
 * Why a read stopped. `retryable`: network, timeouts, 429 and 5xx that outlasted the client's
 * own retries (the job is retried later); otherwise bad credentials, a missing permission or
 * an invalid request, which another attempt will not fix.
 */
export class ConnectorError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    /** The remote body or socket error, for logs only: `message` is what the tenant sees. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'ConnectorError';
  }
}

/** The cursor to read from: the saved one moved back by the rolling window, never before the start date. */
export function effectiveStart(options: ReadOptions, cursorTime: (cursor: string) => Date): Date | undefined {
  const fromCursor = options.cursor ? cursorTime(options.cursor) : undefined;
  const rolled =
    fromCursor && options.rollingPeriodHours
      ? new Date(fromCursor.getTime() - options.rollingPeriodHours * 3600_000)
      : fromCursor;
  if (!rolled) return options.startDate;
  if (!options.startDate) return rolled;
  return rolled > options.startDate ? rolled : options.startDate;
}
