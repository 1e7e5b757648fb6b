import { mutationConfig } from '../../tools/mutation/base-config.mjs';

export default mutationConfig({
  dir: 'libs/events',
  mutate: ['libs/events/src/**/*.ts', '!libs/events/src/**/*.test.ts', '!libs/events/src/index.ts'],
  tests: ['src/**/*.test.ts'],
  breakAt: 90,
});
