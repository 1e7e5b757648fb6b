export { originAllowed } from './origin-match';
export type {
  DestinationKind,
  DestinationSummary,
  ResolvedDestination,
  TenantRecord,
  WriteKeyRecord,
} from './tenant-record';
export { isPlausibleWriteKey, MAX_WRITE_KEY_LENGTH } from './tenant-record';
export { warehouseSchemaFor } from './warehouse-location';
export { ControlPlaneClient, ControlPlaneUnavailable } from './control-plane-client';
