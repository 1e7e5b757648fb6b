/** A JSON Schema document (draft 2020-12 compatible subset). */
export type JsonSchema = Record<string, unknown>;

/** One stream a source of this type imports: a warehouse table, upserted on its key. */
export interface ImportTaskView {
  name: string;
  primaryKey: string;
  cursorField: string;
}

/** An app type of the catalog: what an app of it can do and what it needs. */
export interface AppTypeView {
  /** The value of `appType` (apps) and `syncType` (sources). */
  appType: string;
  name: string;
  description: string;
  roles: ('source' | 'destination' | 'warehouse')[];
  /** For destination-role types: what the destination does with events. */
  category: 'product_analytics' | 'customer_data' | 'messaging' | 'push' | 'advertising' | 'webhook' | null;
  /** The consent group (`context.consent`) an event must not deny to be forwarded here. */
  consentGroup: 'analytics' | 'marketing' | null;
  /** What a source of this type imports (its import tasks); empty for tracking sources and destinations. */
  importTasks: ImportTaskView[];
  /** JSON Schema of `credentials`; secret fields carry `writeOnly: true`. */
  credentialsSchema: JsonSchema;
  /** JSON Schema of `config`. */
  configSchema: JsonSchema;
  /** The credential fields that are secret: never returned, never echoed. */
  secretFields: string[];
  /** The operator setting that replaces the vendor's host, or null when there is none. */
  baseUrlVariable: string | null;
}
