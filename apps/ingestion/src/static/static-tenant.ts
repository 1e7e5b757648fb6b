import type { WriteKeyRecord } from '@pipeline/tenancy';

/** Static mode's only tenant: any origin, no forwarding destinations, the configured warehouse schema. */
export function staticTenant(warehouseSchema: string): WriteKeyRecord {
  return {
    accountId: 'static',
    writeKeyId: 'static',
    status: 'active',
    allowedOrigins: [],
    destinations: [],
    // Static mode has no registry: its one warehouse is WAREHOUSE_URL, named `static` here.
    warehouse: {
      kind: 'warehouse',
      warehouseId: 'static',
      engine: 'postgres',
      schema: warehouseSchema,
      epoch: 1,
    },
  };
}
