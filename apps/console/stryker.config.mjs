import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// The console's pure logic whose mistake would put an API error at the wrong field or send the
// API a value its form did not check: the error paths normalized to field paths and the message
// a field shows, and the JSON-Schema form's values (what it renders, the form state of a stored
// value, the body collected from a form and the checks before sending it, a field's label).
// Both live in plain modules beside the components that render them.
export default mutationConfig({
  dir: 'apps/console',
  mutate: ['apps/console/src/field-paths.ts', 'apps/console/src/schema-values.ts'],
  tests: ['src/field-paths.test.ts', 'src/schema-values.test.ts'],
  breakAt: 95,
});
