import type { DeadLetterEvent } from './dead-letter.dto';

// What the list shows of a dead letter, computed once when it is indexed: the list then reads
// at most PREVIEW_BYTES of each row, never the record (up to 512 KB). Pure, tested on its own.

/** Events of a record the view shows; `messageIds` has them all. */
export const PREVIEW_EVENTS = 10;
/** An event larger than this as JSON is shown as a stub. */
export const PREVIEW_EVENT_BYTES = 16 * 1024;
/**
 * The events shown of one record together, as JSON: once reached, the later ones are stubs.
 * A page of 100 letters then carries at most about 6.4 MB of previews to parse and answer.
 */
export const PREVIEW_BYTES = 64 * 1024;

/** An event as the outbox envelope holds it: what a stub keeps of it. */
export interface PreviewedEvent {
  messageId: string;
  type: string;
}

export interface DeadLetterPreview {
  eventCount: number;
  events: DeadLetterEvent[];
}

const stubOf = (event: PreviewedEvent): DeadLetterEvent => ({
  messageId: event.messageId,
  type: event.type,
  truncated: true,
});

/** The preview of a record's events: the first PREVIEW_EVENTS, stubs past the byte bounds. */
export function previewOf(events: readonly PreviewedEvent[]): DeadLetterPreview {
  const shown: DeadLetterEvent[] = [];
  let bytes = 0;
  for (const event of events.slice(0, PREVIEW_EVENTS)) {
    const size = Buffer.byteLength(JSON.stringify(event));
    if (size > PREVIEW_EVENT_BYTES || bytes + size > PREVIEW_BYTES) {
      shown.push(stubOf(event));
      continue;
    }
    bytes += size;
    shown.push(event as unknown as DeadLetterEvent);
  }
  return { eventCount: events.length, events: shown };
}

/** A stored preview's events; a preview that is not a JSON array shows none. */
export function previewEvents(stored: string): DeadLetterEvent[] {
  try {
    const events: unknown = JSON.parse(stored);
    return Array.isArray(events) ? (events as DeadLetterEvent[]) : [];
  } catch {
    return [];
  }
}
