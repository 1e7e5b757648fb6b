import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// Every decision on a connection to a host a tenant chose, all pure: the address policy, the
// check of a URL a tenant saves, the connection guard (the lookup that refuses a name with any
// refused address, IP literals, which guarded fetch a set of allowed ranges shares), the
// redirect rules (which requests follow, how far, which headers cross origins), the operator's
// allowed ranges as configured, how a failed request is classified, the Retry-After parser,
// and the limits on a socket to a tenant's server (idle deadline, answer cap).
// guarded-fetch.ts only wires these into undici; its tests run against local servers.
export default mutationConfig({
  dir: 'libs/egress',
  mutate: [
    'libs/egress/src/retry-after.ts',
    'libs/egress/src/address-policy.ts',
    'libs/egress/src/tenant-url.ts',
    'libs/egress/src/connection-guard.ts',
    'libs/egress/src/redirect-policy.ts',
    'libs/egress/src/egress-config.ts',
    'libs/egress/src/network-failure.ts',
    'libs/egress/src/socket-limits.ts',
  ],
  tests: [
    'src/retry-after.test.ts',
    'src/address-policy.test.ts',
    'src/tenant-url.test.ts',
    'src/connection-guard.test.ts',
    'src/redirect-policy.test.ts',
    'src/egress-config.test.ts',
    'src/network-failure.test.ts',
    'src/socket-limits.test.ts',
  ],
  breakAt: 98,
});
