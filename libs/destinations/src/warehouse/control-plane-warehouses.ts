import { WarehouseQuestionRefused, type ControlPlaneClient } from '@pipeline/tenancy';
import type { ReportWarehouseStatus } from './warehouse-destination';
import type { ResolveWarehouse } from './warehouse-directory';

// The control plane keeps this much of a status report's detail (its WarehouseStatusReport).
const maxDetailLength = 500;

/**
 * The warehouse consumer's two questions to the control plane (ControlPlaneClient, with the
 * consumer's INTERNAL_TOKEN_DELIVERY_WAREHOUSE): where an account's rows go, null for an
 * account it does not know (its records are dead-lettered as `no_warehouse`), and what the
 * consumer met at a warehouse. Any other failure to answer is the control plane being
 * unavailable: the directory holds the batch until it answers.
 */
export function controlPlaneWarehouseCalls(
  client: Pick<ControlPlaneClient, 'resolveWarehouse' | 'reportWarehouseStatus'>,
): { resolve: ResolveWarehouse; reportStatus: ReportWarehouseStatus } {
  return {
    resolve: async (accountId) => {
      try {
        return await client.resolveWarehouse(accountId);
      } catch (error) {
        if (error instanceof WarehouseQuestionRefused && error.code === 'account_not_found') return null;
        throw error;
      }
    },
    reportStatus: (warehouseId, status, detail) =>
      client.reportWarehouseStatus(warehouseId, status, detail?.slice(0, maxDetailLength)),
  };
}
