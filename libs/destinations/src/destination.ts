import type { IHeaders } from 'kafkajs';

/** One record read from the outbox, as a destination receives it. */
export interface DeliveryMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: IHeaders;
  timestamp: string;
}

/**
 * A delivery target. `deliver` resolves once every message of the batch is delivered (or
 * durably parked); throwing leaves the batch uncommitted, so it is read again.
 */
export interface Destination {
  readonly kind: string;
  deliver(messages: readonly DeliveryMessage[]): Promise<void>;
  close?(): Promise<void>;
}
