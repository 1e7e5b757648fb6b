export { correctedTimestamp, normalizeEvent, UnstorableEvent, type ReceiptContext } from './event-normalizer';
export { checkEventContent, maxEventDepth, storableText, type ContentCheck } from './event-content';
export { parseJsonText } from './json-text';
export { eventTimeIso, eventTimeRange, inEventTimeRange, parseEventTime } from './event-time';
export {
  collectEventTypes,
  eventLimits,
  eventTypes,
  trackingEventSchema,
  type AliasEvent,
  type EventContext,
  type EventType,
  type GroupEvent,
  type IdentifyEvent,
  type PageEvent,
  type ScreenEvent,
  type TrackEvent,
  type TrackingEvent,
} from './event-schema';
export { validateEvent, type EventDialect, type EventError, type EventValidation } from './event-validator';
export {
  tableForType,
  warehouseTables,
  type ColumnType,
  type RowOf,
  type WarehouseRow,
  type WarehouseTable,
} from './warehouse-tables';
export {
  envelopeWith,
  MAX_ENVELOPE_BYTES,
  MAX_VIOLATIONS_PER_EVENT,
  outboxKey,
  parseOutboxEnvelope,
  receiptContextOf,
  toOutboxEnvelopes,
  type EnvelopePlan,
  type OutboxEnvelope,
  type PlanVerdict,
} from './outbox-envelope';
export {
  consentAllows,
  consentGroupFor,
  destinationCategories,
  type ConsentGroup,
  type DestinationCategory,
} from './consent';
export { integrationAllows, segmentDestinationNames } from './destination-selection';
