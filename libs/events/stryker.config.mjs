import { mutationConfig } from '../../tools/mutation/base-config.mjs';

export default mutationConfig({
  dir: 'libs/events',
  // testing/ holds the tests' own inputs (hostile bodies), not logic the service runs.
  mutate: [
    'libs/events/src/**/*.ts',
    '!libs/events/src/**/*.test.ts',
    '!libs/events/src/index.ts',
    '!libs/events/src/testing/**',
  ],
  tests: ['src/**/*.test.ts'],
  breakAt: 91,
});
