/** `context.library` of every event (`<service>-web-tracking` with the SDK's own version: docs/sdk.md#what-every-event-carries). */
export const library = { name: 'pipeline-web-tracking', version: '0.1.0' } as const;

/**
 * The limits of libs/events (`eventLimits`), repeated here because the bundle must not import
 * that module's values (it would pull ajv into the browser); a test keeps the two equal.
 */
export const limits = {
  maxEventBytes: 32 * 1024,
  maxEventNameLength: 200,
  maxIdLength: 200,
  maxBatchSize: 100,
  /** Strings of the context envelope (`shortText` of the schema). */
  maxContextText: 2048,
} as const;

export type Properties = Record<string, unknown>;
