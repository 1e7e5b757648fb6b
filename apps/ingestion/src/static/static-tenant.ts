import type { TenantRecord } from '@pipeline/tenancy';

/** Static mode's only tenant: any origin, no forwarding destinations, the configured warehouse schema. */
export function staticTenant(warehouseSchema: string): TenantRecord {
  return {
    accountId: 'static',
    writeKeyId: 'static',
    status: 'active',
    allowedOrigins: [],
    destinations: [],
    warehouse: { kind: 'warehouse', schema: warehouseSchema },
  };
}
