import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// Everything of tenancy that decides who a request belongs to and what it may do: allowed-origin
// matching, the client's address behind trusted proxies and the key its limits count under,
// the tenant cache (expiry, invalidation on tenant changes, negative caching, stale use while
// the control plane is down), how a change message and a lookup answer are read, which write
// keys are plausible, each account's warehouse schema, and how privacy regulations decide an
// event (keyed subject hashes, suppression and deletion cut-offs). The control-plane client's HTTP
// call and the Redis publisher and subscriber are left to their integration tests.
export default mutationConfig({
  dir: 'libs/tenancy',
  mutate: [
    'libs/tenancy/src/origin-match.ts',
    'libs/tenancy/src/client-address.ts',
    'libs/tenancy/src/tenant-cache.ts',
    'libs/tenancy/src/cache-freshness.ts',
    'libs/tenancy/src/tenant-change-message.ts',
    'libs/tenancy/src/control-plane-answer.ts',
    'libs/tenancy/src/tenant-record.ts',
    'libs/tenancy/src/warehouse-location.ts',
    'libs/tenancy/src/regulated-subjects.ts',
    'libs/tenancy/src/regulated-events.ts',
  ],
  tests: [
    'src/origin-match.test.ts',
    'src/client-address.test.ts',
    'src/tenant-cache.pure.test.ts',
    'src/cache-freshness.test.ts',
    'src/tenant-change-message.test.ts',
    'src/control-plane-answer.test.ts',
    'src/tenant-record.test.ts',
    'src/warehouse-location.test.ts',
    'src/regulated-subjects.test.ts',
    'src/regulated-events.test.ts',
  ],
  breakAt: 98,
});
