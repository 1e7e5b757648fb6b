import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// What a tenant may configure for an app (each app type's credentials and config schemas: the
// hosts, URLs, ids and secrets it takes), where an app's credentials are sent, and what the
// catalog derives from its definitions (roles, consent groups, forwarding, deletion and base-URL
// lists).
// A mistake here opens a host to a tenant's choice or sends a secret elsewhere.
export default mutationConfig({
  dir: 'libs/catalog',
  mutate: ['libs/catalog/src/catalog.ts', 'libs/catalog/src/app-type.ts', 'libs/catalog/src/app-types/*.ts'],
  tests: ['src/catalog-validation.test.ts'],
  breakAt: 98,
});
