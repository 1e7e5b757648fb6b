import type { WriteKeyRecord } from '@pipeline/tenancy';

/** Static mode's only tenant: any origin, no forwarding destinations, the configured warehouse schema. */
export function staticTenant(warehouseSchema: string): WriteKeyRecord {
  return {
    accountId: 'static',
    writeKeyId: 'static',
    status: 'active',
    allowedOrigins: [],
    destinations: [],
    warehouse: { kind: 'warehouse', schema: warehouseSchema },
  };
}
