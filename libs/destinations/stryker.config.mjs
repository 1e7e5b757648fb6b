import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

const forwarding = 'libs/destinations/src/forwarding';

// The forwarders' field mappings: how our events become each vendor's payload, with the tables
// of trait and event names they map. Their request, batching and verdict code talks HTTP and is
// left to the integration tests.
const mappings = {
  amplitude: ['sessionIdOf', 'amplitudeEventOf'],
  braze: ['standardAttributes', 'attributesOf', 'purchasesOf', 'brazeObjectsOf'],
  'customer-io': ['seconds', 'personAttributesOf', 'customerIoOperationOf'],
  'google-ads': ['googleEmail', 'googleDateTime', 'numberOf', 'conversionActionsOf', 'clickConversionOf'],
  hubspot: [
    'standardProperties',
    'addressProperties',
    'hubspotPropertyName',
    'hubspotValue',
    'hubspotPropertiesOf',
    'hubspotContactOf',
    'hubspotInputOf',
  ],
  'meta-conversions': [
    'metaStandardEvents',
    'metaPhone',
    'hashed',
    'numberOf',
    'customDataOf',
    'metaServerEventOf',
  ],
  mixpanel: ['mixpanelRecordOf'],
  onesignal: ['tagsOf', 'languageOf', 'oneSignalItemOf'],
};

const config = mutationConfig({
  dir: 'libs/destinations',
  mutate: [
    ...Object.entries(mappings).flatMap(([vendor, names]) =>
      functionRanges(`${forwarding}/vendors/${vendor}/${vendor}-forwarder.ts`, names),
    ),
    `${forwarding}/event-fields.ts`,
    `${forwarding}/hashed-identity.ts`,
    `${forwarding}/segment-message.ts`,
  ],
  // Pure tests of the mappings: event in, vendor payload out. The forwarders' tests against the
  // look-alike vendor servers cover the mappings too, but through HTTP, batching and retries,
  // which a mutant can make wait for a timeout; they stay the integration tests.
  tests: [
    'src/forwarding/vendors/*/*-mapping.test.ts',
    'src/forwarding/event-fields.test.ts',
    'src/forwarding/hashed-identity.test.ts',
    'src/forwarding/segment-message.test.ts',
  ],
  breakAt: 80,
});

// Every test file loads the event contract, whose validator compiles its schema, so a mutant
// runs only the test files that import its file: a vendor's mutant runs that vendor's tests, not
// all eleven files (about four times fewer files loaded in a run).
export default { ...config, jest: { ...config.jest, enableFindRelatedTests: true } };
