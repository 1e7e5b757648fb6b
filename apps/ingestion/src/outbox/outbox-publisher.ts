import type { Message, Producer } from 'kafkajs';

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
}

/**
 * Group commit for the outbox. kafkajs does not batch separate send() calls, so requests that
 * arrive while sends are in flight are queued and leave together in the next send. A request
 * resolves only when the send that carried its own messages was acknowledged by all in-sync
 * replicas (acks -1); if that send fails, every request in it fails.
 */
export class OutboxPublisher {
  private queue: Pending[] = [];
  private inFlight = 0;
  private readonly maxInFlight: number;
  private readonly maxMessages: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly producer: Producer,
    private readonly options: OutboxPublisherOptions,
  ) {
    this.maxInFlight = options.maxInFlight ?? 4;
    this.maxMessages = options.maxMessagesPerSend ?? 2000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  publish(messages: Message[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`outbox acknowledgement timed out after ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      this.queue.push({
        messages,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
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
      this.producer
        .send({ topic: this.options.topic, acks: -1, messages: group.flatMap((p) => p.messages) })
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
