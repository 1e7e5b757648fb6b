/**
 * A function version bound to a destination or write key (docs/management-api.md#functions):
 * the code to run on the events in flight. Only the delivery lookups carry it, never the record
 * ingestion resolves.
 */
export interface BoundFunction {
  functionId: string;
  versionId: string;
  version: number;
  /** An ES module exporting `transform(event, ctx)`. */
  code: string;
}
