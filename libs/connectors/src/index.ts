export {
  ConnectorError,
  type Connector,
  type ReadOptions,
  type SourceRecord,
  type StreamPage,
  type StreamSpec,
} from './connector';
export {
  HubSpotConnector,
  HUBSPOT_SEARCH_CAP,
  hubspotRecord,
  hubspotStreams,
  type HubSpotConnectorOptions,
  type HubSpotObject,
} from './hubspot/hubspot-connector';
export {
  connectorHttpOptions,
  textField,
  type ConnectorHttpOptions,
  type ConnectorOptions,
  type SourceApp,
} from './connector-options';
export { type HttpReaderOptions } from './http-reader';
export {
  ShopifyConnector,
  nextPageUrl,
  shopifyApiVersion,
  shopifyApiVersionPattern,
  shopifyStreams,
  type ShopifyConnectorOptions,
} from './shopify/shopify-connector';
export {
  StripeConnector,
  stripeEventRetentionMs,
  stripeEventTypes,
  stripeStreams,
  type StripeConnectorOptions,
} from './stripe/stripe-connector';
