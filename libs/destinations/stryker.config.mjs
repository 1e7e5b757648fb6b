import { mutationConfig } from '../../tools/mutation/base-config.mjs';

const forwarding = 'libs/destinations/src/forwarding';

const config = mutationConfig({
  dir: 'libs/destinations',
  mutate: [
    // The forwarders' field mappings, one file per vendor: how our events become its payload,
    // with the tables of trait and event names they map. The forwarder beside each talks HTTP,
    // batches and judges answers, and is left to the integration tests.
    `${forwarding}/vendors/*/*-mapping.ts`,
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
