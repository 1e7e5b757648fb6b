import { Type, type Static, type TSchema } from '@sinclair/typebox';

// The tracking event of docs/tracking-api.md#events, defined once: TypeBox yields the JSON Schema that ajv
// compiles and the TypeScript type the SDK, ingestion and the delivery consumers share.

/** Limits the spec leaves open (docs/tracking-api.md, "Events"). */
export const eventLimits = {
  /** Serialized size of one event. */
  maxEventBytes: 32 * 1024,
  maxMessageIdLength: 100,
  maxEventNameLength: 200,
  /** anonymousId, userId, groupId, previousId, sessionId. */
  maxIdLength: 200,
  /** Events per request (docs/tracking-api.md#events). */
  maxBatchSize: 100,
  /** Strings of the context envelope. */
  maxContextText: 2048,
  /** context.screen width and height: the warehouse's 32-bit integer columns. */
  maxScreenPixels: 2_147_483_647,
} as const;

const id = (description: string) =>
  Type.String({ minLength: 1, maxLength: eventLimits.maxIdLength, description });
// `event-time` is parseEventTime (event-time.ts): a pattern alone let impossible dates through.
const isoTime = (description: string) => Type.String({ format: 'event-time', description });
// Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default and the description is for readers
const freeObject = (description: string) => Type.Object({}, { additionalProperties: true, description });
const shortText = Type.String({ maxLength: eventLimits.maxContextText });

/** The camelCase context envelope; callers may merge extra keys. */
export const eventContextSchema = Type.Object(
  {
    source: Type.Optional(shortText),
    library: Type.Optional(
      Type.Object(
        { name: Type.Optional(shortText), version: Type.Optional(shortText) },
        // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
        { additionalProperties: true },
      ),
    ),
    // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
    session: Type.Optional(Type.Object({ id: Type.Optional(shortText) }, { additionalProperties: true })),
    page: Type.Optional(
      Type.Object(
        {
          url: Type.Optional(shortText),
          path: Type.Optional(shortText),
          title: Type.Optional(shortText),
          referrer: Type.Optional(shortText),
        },
        // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
        { additionalProperties: true },
      ),
    ),
    screen: Type.Optional(
      Type.Object(
        {
          // The warehouse columns are 32-bit integers.
          width: Type.Optional(Type.Integer({ minimum: 0, maximum: eventLimits.maxScreenPixels })),
          height: Type.Optional(Type.Integer({ minimum: 0, maximum: eventLimits.maxScreenPixels })),
        },
        // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
        { additionalProperties: true },
      ),
    ),
    campaign: Type.Optional(Type.Record(Type.String(), shortText)),
    clickId: Type.Optional(Type.Record(Type.String(), shortText)),
    consent: Type.Optional(Type.Record(Type.String(), Type.Boolean())),
    browser: Type.Optional(shortText),
    os: Type.Optional(shortText),
    device: Type.Optional(shortText),
    language: Type.Optional(shortText),
    locale: Type.Optional(shortText),
    userAgent: Type.Optional(shortText),
  },
  // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
  { additionalProperties: true },
);

const common = {
  messageId: Type.String({
    minLength: 1,
    maxLength: eventLimits.maxMessageIdLength,
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    description: 'Unique event id (UUID recommended)',
  }),
  // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
  timestamp: isoTime('When the event happened, by the client clock (RFC 3339)'),
  // Optional here: Segment's routes take userId alone. /collect requires it (validateEvent's
  // 'collect' dialect), as its spec says.
  // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
  anonymousId: Type.Optional(id('Anonymous visitor id')),
  // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
  userId: Type.Optional(Type.Union([id('Known user id'), Type.Null()])),
  // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
  sessionId: Type.Optional(id('Session id')),
  writeKey: Type.Optional(Type.String({ maxLength: 200 })),
  context: Type.Optional(eventContextSchema),
  // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
  sentAt: Type.Optional(isoTime('When the client sent the event, for clock correction')),
  /**
   * Segment's destination selection: `{"All": false, "Amplitude": true}`; a value that is an
   * object (destination options) also enables (docs/tracking-api.md, "Choosing destinations per event").
   */
  integrations: Type.Optional(
    // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
    Type.Record(Type.String(), Type.Union([Type.Boolean(), Type.Object({}, { additionalProperties: true })])),
  ),
};

/** Every event names who did it: an anonymous id, a user id, or both. */
const someone = {
  anyOf: [
    { required: ['anonymousId'] },
    { required: ['userId'], properties: { userId: { type: 'string' } } },
  ],
};

const eventName = Type.String({ minLength: 1, maxLength: eventLimits.maxEventNameLength });

export const trackEventSchema = Type.Object(
  {
    type: Type.Literal('track'),
    event: eventName,
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    properties: Type.Optional(freeObject('Event properties')),
    ...common,
  },
  { additionalProperties: true, ...someone },
);
export const pageEventSchema = Type.Object(
  {
    type: Type.Literal('page'),
    name: Type.Optional(Type.String({ maxLength: eventLimits.maxEventNameLength })),
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    properties: Type.Optional(freeObject('Page properties')),
    ...common,
  },
  { additionalProperties: true, ...someone },
);
/** A mobile app's screen view (Segment's `screen`): stored like a page, in `events`. */
export const screenEventSchema = Type.Object(
  {
    type: Type.Literal('screen'),
    name: Type.Optional(Type.String({ maxLength: eventLimits.maxEventNameLength })),
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    properties: Type.Optional(freeObject('Screen properties')),
    ...common,
  },
  { additionalProperties: true, ...someone },
);
export const identifyEventSchema = Type.Object(
  {
    type: Type.Literal('identify'),
    ...common,
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    userId: id('Known user id'),
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    traits: Type.Optional(freeObject('User traits')),
  },
  // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
  { additionalProperties: true },
);
export const groupEventSchema = Type.Object(
  {
    type: Type.Literal('group'),
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    groupId: id('Group id'),
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    traits: Type.Optional(freeObject('Group traits')),
    ...common,
  },
  { additionalProperties: true, ...someone },
);
export const aliasEventSchema = Type.Object(
  {
    type: Type.Literal('alias'),
    ...common,
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    userId: id('The new user id'),
    // Stryker disable next-line StringLiteral: a description, for readers of the schema; no behaviour reads it
    previousId: id('The previous id'),
  },
  // Stryker disable next-line ObjectLiteral: JSON Schema takes other keys by default; the option says so to the reader
  { additionalProperties: true },
);

export type TrackEvent = Static<typeof trackEventSchema>;
export type PageEvent = Static<typeof pageEventSchema>;
export type IdentifyEvent = Static<typeof identifyEventSchema>;
export type GroupEvent = Static<typeof groupEventSchema>;
export type AliasEvent = Static<typeof aliasEventSchema>;
export type ScreenEvent = Static<typeof screenEventSchema>;
export type TrackingEvent = TrackEvent | PageEvent | ScreenEvent | IdentifyEvent | GroupEvent | AliasEvent;
export type EventType = TrackingEvent['type'];
export type EventContext = Static<typeof eventContextSchema>;

/** The types /collect takes (docs/tracking-api.md#events). */
export const collectEventTypes: readonly EventType[] = ['track', 'identify', 'page', 'group', 'alias'];
/** The types Segment's tracking API takes: /collect's and `screen`. */
export const eventTypes: readonly EventType[] = [...collectEventTypes, 'screen'];

/**
 * One schema for all six types: ajv's discriminator picks the variant by `type`, so an
 * invalid event gets the errors of its own type only.
 */
export const trackingEventSchema: TSchema = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: [...eventTypes] } },
  discriminator: { propertyName: 'type' },
  oneOf: [
    trackEventSchema,
    identifyEventSchema,
    pageEventSchema,
    screenEventSchema,
    groupEventSchema,
    aliasEventSchema,
  ],
} as unknown as TSchema;
