import type { WriteKeyRecord } from '@pipeline/tenancy';
import { batchDedupeId } from '../outbox/batch-dedupe-key';
import { batchReceipt, deliveryCount } from './batch-receipt';

const facts = {
  receivedAt: new Date(Date.UTC(2026, 2, 1, 12, 30, 0, 250)),
  ip: '198.51.100.7',
  userAgent: 'Mozilla/5.0',
};
const tenantA = { accountId: 'acc-a', writeKeyId: 'wk-a' };
const tenantB = { accountId: 'acc-b', writeKeyId: 'wk-b' };
const events = [{ messageId: 'm1' }, { messageId: 'm2' }];

describe('batchReceipt', () => {
  it('carries the tenant the key resolved to, the batch id and what the server knew on receipt', () => {
    expect(batchReceipt(tenantA, events, facts, '2026-03-01T12:29:59.000Z')).toEqual({
      v: 2,
      accountId: 'acc-a',
      writeKeyId: 'wk-a',
      batchId: batchDedupeId('acc-a', ['m1', 'm2']),
      receivedAt: '2026-03-01T12:30:00.250Z',
      ip: '198.51.100.7',
      userAgent: 'Mozilla/5.0',
      batchSentAt: '2026-03-01T12:29:59.000Z',
    });
  });

  it('leaves batchSentAt out when the batch had none, and keeps unknown ip and user agent as null', () => {
    const receipt = batchReceipt(tenantB, events, { ...facts, ip: null, userAgent: null }, undefined);
    expect(receipt).toEqual({
      v: 2,
      accountId: 'acc-b',
      writeKeyId: 'wk-b',
      batchId: batchDedupeId('acc-b', ['m1', 'm2']),
      receivedAt: '2026-03-01T12:30:00.250Z',
      ip: null,
      userAgent: null,
    });
    expect(Object.keys(receipt)).toEqual([
      'v',
      'accountId',
      'writeKeyId',
      'batchId',
      'receivedAt',
      'ip',
      'userAgent',
    ]);
    expect(Object.keys(batchReceipt(tenantB, events, facts, ''))).not.toContain('batchSentAt');
  });

  it('gives two accounts’ identical batches different ids, and a retry the same one', () => {
    const a = batchReceipt(tenantA, events, facts, undefined).batchId;
    expect(batchReceipt(tenantB, events, facts, undefined).batchId).not.toBe(a);
    expect(batchReceipt(tenantA, [{ messageId: 'm1' }, { messageId: 'm2' }], facts, undefined).batchId).toBe(
      a,
    );
    expect(batchReceipt(tenantA, [{ messageId: 'm1' }], facts, undefined).batchId).not.toBe(a);
  });
});

describe('deliveryCount', () => {
  const destination: WriteKeyRecord['destinations'][number] = {
    integrationId: 'i1',
    kind: 'product_analytics',
    appId: 'app1',
    appType: 'amplitude',
    dataType: 'event',
  };
  const warehouse = {
    kind: 'warehouse' as const,
    warehouseId: 'w',
    engine: 'postgres' as const,
    schema: 'acc_a',
    epoch: 1,
  };

  it('counts each destination and the warehouse', () => {
    expect(deliveryCount({ destinations: [], warehouse: null })).toBe(0);
    expect(deliveryCount({ destinations: [], warehouse })).toBe(1);
    expect(deliveryCount({ destinations: [destination], warehouse: null })).toBe(1);
    expect(
      deliveryCount({ destinations: [destination, { ...destination, integrationId: 'i2' }], warehouse }),
    ).toBe(3);
  });
});
