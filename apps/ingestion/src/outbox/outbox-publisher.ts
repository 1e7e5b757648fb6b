import { CompressionTypes, type Message, type Producer } from 'kafkajs';
import { runOutsideRequest } from '@pipeline/logger';
import { withSendSpan } from '@pipeline/telemetry';

interface Pending {
  messages: Message[];
  resolve: () => void;
  reject: (error: Error) => void;
}

export interface OutboxPublisherOptions {
  topic: string;
  /** Sends in flight at once; more waiting requests are coalesced into the next send. */
  maxInFlight?: number;
  /** Upper bound of messages in one send. */
  maxMessagesPerSend?: number;
  /** A request waits at most this long for its acknowledgement, then fails (503). */
  timeoutMs?: number;
  /** The codec of each send's record batch (OUTBOX_COMPRESSION); none unless given. */
  compression?: OutboxCompression;
}

export type OutboxCompression = 'none' | 'gzip' | 'lz4';

const codecs: Record<OutboxCompression, CompressionTypes> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  lz4: CompressionTypes.LZ4,
};

/**
 * Group commit for the outbox. kafkajs does not batch separate send() calls, so requests that
 * arrive while sends are in flight are queued and leave together in the next send. A request
 * resolves only when the send that carried its own messages was acknowledged by all in-sync
 * replicas (acks -1); if that send fails, every request in it fails.
 */
export class OutboxPublisher {
  private queue: Pending[] = [];
  private inFlight = 0;
  private pendingRecordCount = 0;
  private pendingRequestCount = 0;
  private readonly maxInFlight: number;
  private readonly maxMessages: number;
  private readonly timeoutMs: number;
  private readonly compression: CompressionTypes;

  constructor(
    private readonly producer: Producer,
    private readonly options: OutboxPublisherOptions,
  ) {
    this.maxInFlight = options.maxInFlight ?? 4;
    this.maxMessages = options.maxMessagesPerSend ?? 2000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.compression = codecs[options.compression ?? 'none'];
  }

  /**
   * Records and requests handed to publish() whose send has not settled yet (queued or in
   * flight; a request that timed out waits here until its send settles).
   */
  get pending(): { records: number; requests: number } {
    return { records: this.pendingRecordCount, requests: this.pendingRequestCount };
  }

  /**
   * A request's records, acknowledged or failed. Traced as a `send <topic>` span of the
   * request, whose trace context every record carries in its headers to the delivery consumers.
   */
  publish(messages: Message[]): Promise<void> {
    return withSendSpan(this.options.topic, messages.length, (traceHeaders) =>
      this.enqueue(
        Object.keys(traceHeaders).length === 0
          ? messages
          : messages.map((message) => ({ ...message, headers: { ...message.headers, ...traceHeaders } })),
      ),
    );
  }

  private enqueue(messages: Message[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`outbox acknowledgement timed out after ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      this.pendingRecordCount += messages.length;
      this.pendingRequestCount += 1;
      const settled = () => {
        clearTimeout(timer);
        this.pendingRecordCount -= messages.length;
        this.pendingRequestCount -= 1;
      };
      this.queue.push({
        messages,
        resolve: () => {
          settled();
          resolve();
        },
        reject: (error) => {
          settled();
          reject(error);
        },
      });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const group: Pending[] = [];
      let count = 0;
      for (let next = this.queue[0]; next; next = this.queue[0]) {
        if (group.length > 0 && count + next.messages.length > this.maxMessages) break;
        this.queue.shift();
        group.push(next);
        count += next.messages.length;
      }
      this.inFlight += 1;
      // One send carries many requests: its work (and kafkajs's log lines) belongs to none of them.
      runOutsideRequest(() =>
        this.producer.send({
          topic: this.options.topic,
          acks: -1,
          compression: this.compression,
          messages: group.flatMap((p) => p.messages),
        }),
      )
        .then(
          () => group.forEach((p) => p.resolve()),
          (error: Error) => group.forEach((p) => p.reject(error)),
        )
        .finally(() => {
          this.inFlight -= 1;
          this.pump();
        });
    }
  }
}
