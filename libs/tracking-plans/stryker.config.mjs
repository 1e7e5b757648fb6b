import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// All of a tracking plan's logic, all pure: the document and its caps, canonical JSON and the
// content hash, JSON Pointer escaping, the references walk (local only, no cycles, nesting
// depth), the schema engine (dialects, RE2 patterns, strictness), checkPlan's problems, the
// validator's rule choice, pins and violation codes, and the SchemaVer diff. index.ts only
// re-exports.
export default mutationConfig({
  dir: 'libs/tracking-plans',
  mutate: [
    'libs/tracking-plans/src/plan-document.ts',
    'libs/tracking-plans/src/canonical-json.ts',
    'libs/tracking-plans/src/json-pointer.ts',
    'libs/tracking-plans/src/schema-refs.ts',
    'libs/tracking-plans/src/schema-engine.ts',
    'libs/tracking-plans/src/plan-compile.ts',
    'libs/tracking-plans/src/plan-check.ts',
    'libs/tracking-plans/src/plan-validator.ts',
    'libs/tracking-plans/src/plan-diff.ts',
  ],
  tests: [
    'src/canonical-json.test.ts',
    'src/plan-check.test.ts',
    'src/plan-validator.test.ts',
    'src/plan-diff.test.ts',
  ],
  breakAt: 90,
});
