export {
  ConnectorError,
  type Connector,
  type ReadOptions,
  type SourceRecord,
  type StreamPage,
  type StreamSpec,
} from './connector';
export { connectorFor, type SourceApp } from './connector-registry';
export { retryAfterMs, type HttpReaderOptions } from './http-reader';
export { ShopifyConnector, nextPageUrl, type ShopifyConnectorOptions } from './shopify/shopify-connector';
export { StripeConnector, type StripeConnectorOptions } from './stripe/stripe-connector';
export {
  shopifyRecords,
  startShopifyLookAlike,
  startStripeLookAlike,
  stripeRecords,
  type SourceLookAlike,
} from './testing/source-look-alikes';
