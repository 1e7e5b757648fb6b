export {
  consentGroupOf,
  defineAppType,
  fields,
  rolesOf,
  secret,
  text,
  type AnyAppType,
  type AppRole,
  type AppTypeDefinition,
  type ForwardSide,
  type ImportSide,
  type WarehouseSide,
} from './app-type';
export {
  clickhouseDatabaseNamePattern,
  clickhouseWarehouse,
  clickhouseWarehouseDefaults,
} from './app-types/clickhouse-warehouse';
export {
  postgresWarehouse,
  postgresWarehouseDefaults,
  warehouseHostPattern,
  warehouseSchemaNamePattern,
} from './app-types/postgres-warehouse';
export {
  appCatalog,
  appTypeDefinition,
  appTypes,
  baseUrlAppTypes,
  connectorFor,
  credentialsOriginOf,
  consentGroupOfAppType,
  deletionClientFor,
  deliveryKinds,
  destinationCategoryOf,
  forwarderFor,
  forwardingAppTypes,
  importingAppTypes,
  importTasksOf,
  isDeliveryKind,
  rolesOfAppType,
  warehouseAppTypes,
} from './catalog';
