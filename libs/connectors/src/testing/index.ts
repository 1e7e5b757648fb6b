// Test look-alikes of the source platforms: imported as @pipeline/connectors/testing, never
// from the production entry point.
export {
  recordStripeEvent,
  shopifyRecords,
  startShopifyLookAlike,
  startStripeLookAlike,
  stripeRecords,
  type SourceLookAlike,
} from './source-look-alikes';
export { hubspotObjects, startHubSpotLookAlike, type HubSpotLookAlike } from './hubspot-look-alike';
export { startHoldingProxy, type HoldingProxy } from './holding-proxy';
