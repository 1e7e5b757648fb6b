import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

const forwarding = 'libs/destinations/src/forwarding';

// The forwarders' field mappings: how our events become each vendor's payload. Their request,
// batching and verdict code talks HTTP and is left to the integration tests.
const mappings = {
  amplitude: ['sessionIdOf', 'amplitudeEventOf'],
  braze: ['attributesOf', 'purchasesOf', 'brazeObjectsOf'],
  'customer-io': ['seconds', 'personAttributesOf', 'customerIoOperationOf'],
  'google-ads': ['googleEmail', 'googleDateTime', 'numberOf', 'conversionActionsOf', 'clickConversionOf'],
  hubspot: [
    'hubspotPropertyName',
    'hubspotValue',
    'hubspotPropertiesOf',
    'hubspotContactOf',
    'hubspotInputOf',
  ],
  'meta-conversions': ['metaPhone', 'hashed', 'numberOf', 'customDataOf', 'metaServerEventOf'],
  mixpanel: ['mixpanelRecordOf'],
  onesignal: ['tagsOf', 'languageOf', 'oneSignalItemOf'],
};

export default mutationConfig({
  dir: 'libs/destinations',
  mutate: [
    ...Object.entries(mappings).flatMap(([vendor, names]) =>
      functionRanges(`${forwarding}/${vendor}-forwarder.ts`, names),
    ),
    `${forwarding}/event-fields.ts`,
    `${forwarding}/hashed-identity.ts`,
    `${forwarding}/segment-message.ts`,
  ],
  // The forwarders' tests against look-alike vendor servers (in-process HTTP, no Kafka or
  // PostgreSQL); forwarding-destination and forwarding-isolation need the real services.
  tests: ['src/forwarding/*-forwarder.test.ts'],
  breakAt: 80,
});
