import type { ReceiptContext, TrackingEvent } from '@pipeline/events';

/** One accepted event with what the server knew when it arrived. */
export interface OutboundEvent {
  event: TrackingEvent;
  receipt: ReceiptContext;
}
