import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// All of a tracking plan's logic, all pure: the document and its caps, canonical JSON and the
// content hash, JSON Pointer escaping, the references walk (local only, no cycles, nesting
// depth), the schema engine (dialects, RE2 patterns, strictness), checkPlan's problems, the
// validator's rule choice, pins and violation codes, the SchemaVer diff, and the Segment and
// Rudder CLI formats. index.ts only re-exports.
// Static mutants (the code tables and options built when a module loads: the caps, the code
// lists, keyword maps, ajv's options) are ignored: each would rerun every test, 93% of the run's
// time for 37% of its mutants. Tests assert those tables directly (the code lists, the change
// kinds, the caps at their boundaries).
export default {
  ...mutationConfig({
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
      'libs/tracking-plans/src/plan-policy.ts',
      'libs/tracking-plans/src/formats/segment.ts',
      'libs/tracking-plans/src/formats/rudderstack.ts',
    ],
    tests: [
      'src/canonical-json.test.ts',
      'src/plan-check.test.ts',
      'src/plan-validator.test.ts',
      'src/plan-diff.test.ts',
      'src/plan-policy.test.ts',
      'src/formats/segment.test.ts',
      'src/formats/rudderstack.test.ts',
      'src/messages.test.ts',
      'src/edges.test.ts',
    ],
    breakAt: 88,
  }),
  ignoreStatic: true,
};
