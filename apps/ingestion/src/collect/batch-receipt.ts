import type { OutboxEnvelope, TrackingEvent } from '@pipeline/events';
import type { WriteKeyRecord } from '@pipeline/tenancy';
import { batchDedupeId } from '../outbox/batch-dedupe-key';

/** What the server knows of a request on receipt, besides its events. */
export interface ReceiptFacts {
  receivedAt: Date;
  ip: string | null;
  userAgent: string | null;
}

/**
 * What every envelope of a batch carries: the tenant the write key resolved to (the consumers
 * deliver to that account's destinations, and no other), the batch's id and the receipt.
 */
export function batchReceipt(
  tenant: Pick<WriteKeyRecord, 'accountId' | 'writeKeyId'>,
  events: readonly Pick<TrackingEvent, 'messageId'>[],
  facts: ReceiptFacts,
  batchSentAt: string | undefined,
): Omit<OutboxEnvelope, 'events'> {
  return {
    v: 2,
    accountId: tenant.accountId,
    writeKeyId: tenant.writeKeyId,
    batchId: batchDedupeId(
      tenant.accountId,
      events.map((e) => e.messageId),
    ),
    receivedAt: facts.receivedAt.toISOString(),
    ip: facts.ip,
    userAgent: facts.userAgent,
    ...(batchSentAt ? { batchSentAt } : {}),
  };
}

/** Where a tenant's batch goes: each destination, and the warehouse when it has one. */
export function deliveryCount(tenant: Pick<WriteKeyRecord, 'destinations' | 'warehouse'>): number {
  return tenant.destinations.length + (tenant.warehouse ? 1 : 0);
}
