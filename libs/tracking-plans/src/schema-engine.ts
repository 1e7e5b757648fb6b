import Ajv, { type Options } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import { planCaps } from './plan-document';

/** The dialects a plan's schemas may name in `$schema`; no `$schema` means draft-07, as Segment's. */
export const schemaDialects = {
  'draft-07': ['http://json-schema.org/draft-07/schema', 'http://json-schema.org/draft-07/schema#'],
  '2020-12': [
    'https://json-schema.org/draft/2020-12/schema',
    'https://json-schema.org/draft/2020-12/schema#',
  ],
} as const;
export type SchemaDialect = keyof typeof schemaDialects;

export function dialectOf(schema: { $schema?: unknown }): SchemaDialect | undefined {
  if (schema.$schema === undefined) return 'draft-07';
  for (const [dialect, uris] of Object.entries(schemaDialects) as [SchemaDialect, readonly string[]][])
    if (uris.includes(schema.$schema as string)) return dialect;
  return undefined;
}

/** A `pattern` (or `patternProperties` key) the engine will not run. */
export class PatternRefused extends Error {
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`pattern ${JSON.stringify(pattern.slice(0, 80))} ${reason}`);
    this.name = 'PatternRefused';
  }
}

/**
 * `pattern` and `patternProperties` run on RE2 (re2js, pure JavaScript): matching takes time
 * linear in the input, so a tenant's `^(a+)+$` cannot hold the door for seconds as V8's
 * backtracking engine would. RE2 has no look-around and no backreferences; such a pattern is
 * refused when the plan is checked (Segment refuses negative look-ahead too). Measured on this
 * machine: a test costs 0.4-0.9 µs against V8's 0.05 µs, and `^(a+)+$` on 30,000 characters
 * takes 17 ms instead of never ending. re2-wasm was measured and refused: 3.5 µs a test, memory
 * that is never freed, and a fixed 16 MiB heap whose exhaustion aborts the process.
 */
export const re2RegExp: RegExpEngine = Object.assign(
  (pattern: string) => {
    if (pattern.length > planCaps.maxPatternLength)
      throw new PatternRefused(pattern, `is longer than ${planCaps.maxPatternLength} characters`);
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (error) {
      throw new PatternRefused(
        pattern,
        `is not a pattern RE2 runs (no look-around, no backreferences): ${(error as Error).message}`,
      );
    }
    return { test: (text: string) => compiled.test(text), toString: () => `re2:${pattern}` };
  },
  { code: 'unused: plans are never compiled to standalone code' },
);

/**
 * Annotations that Segment's exported schemas carry and that JSON Schema does not define:
 * strict mode would refuse them (Typewriter's own ajv did, on `labels`).
 */
export const annotationKeywords = ['labels'] as const;

const options: Options = {
  allErrors: true,
  // Unknown keywords, formats and ignored keywords are refused: a misspelled `requird` would
  // otherwise validate nothing and nobody would know. Type and tuple strictness would refuse
  // common hand-written schemas (`properties` without `type: object`) that mean what they say.
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  // A plan's schema never names another document: the compiled plan keeps its own schemas only.
  addUsedSchema: false,
  loadSchema: undefined,
  inlineRefs: true,
  // `required: ['constructor']` must not be met by Object.prototype.constructor.
  ownProperties: true,
  code: { regExp: re2RegExp },
};

/**
 * A fresh engine for one dialect. Every compiled plan gets its own, so its compiled schemas are
 * freed with it and no account's schema is ever seen by another's.
 */
export function schemaEngine(dialect: SchemaDialect): Ajv {
  const ajv = dialect === '2020-12' ? new Ajv2020(options) : new Ajv(options);
  addFormats(ajv);
  ajv.addVocabulary([...annotationKeywords]);
  return ajv;
}
