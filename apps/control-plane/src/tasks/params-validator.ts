import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { unprocessable } from '../http/api-errors';
import { schemaFieldErrors } from '../http/schema-errors';
import type { TaskTemplate } from './templates/template';

/**
 * Validates params against a template's JSON Schema with ajv: all errors, defaults filled in,
 * no coercion (a string is not a number). Each template's schema is compiled once.
 */
export class ParamsValidator {
  private readonly ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor() {
    addFormats(this.ajv);
  }

  /** A copy of `params` with defaults, or 422 `invalid_params` naming each failing path. */
  validate(template: TaskTemplate<never>, params: unknown, at: string): Record<string, unknown> {
    const key = `${template.id}@${template.version}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(template.paramsSchema);
      this.compiled.set(key, validate);
    }
    const copy = structuredClone(params ?? {}) as Record<string, unknown>;
    if (!validate(copy)) {
      throw unprocessable(
        'invalid_params',
        `The params do not match the parameter schema of template ${template.id}`,
        schemaFieldErrors(validate.errors ?? [], at, 'is not a parameter of this template'),
      );
    }
    return copy;
  }
}
