export { originAllowed } from './origin-match';
export type { DestinationKind, ResolvedDestination, TenantRecord } from './tenant-record';
export { warehouseSchemaFor } from './warehouse-location';
export { ControlPlaneClient, ControlPlaneUnavailable } from './control-plane-client';
