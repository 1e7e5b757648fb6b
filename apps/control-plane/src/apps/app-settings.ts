import { appCatalog, type AnyAppType } from '@pipeline/catalog';
import Ajv, { type ValidateFunction } from 'ajv';
import { unprocessable } from '../http/api-errors';
import type { ProblemFieldError } from '../http/problem';
import { schemaFieldErrors } from '../http/schema-errors';

/**
 * An app's `credentials` and `config` checked against its app type's JSON Schemas in the
 * catalog, at create and update: a typo or a missing key is a 422 now, not a failed delivery
 * days later. Compiled once; no coercion and no defaults (what is stored is what was sent).
 */
export class AppSettingsValidator {
  private readonly compiled = new Map<string, { credentials: ValidateFunction; config: ValidateFunction }>();

  constructor(catalog: readonly AnyAppType[] = appCatalog) {
    const ajv = new Ajv({ allErrors: true, strict: true });
    for (const definition of catalog) {
      this.compiled.set(definition.appType, {
        credentials: ajv.compile(definition.credentials),
        config: ajv.compile(definition.config),
      });
    }
  }

  /** 422 `invalid_app_settings` naming each failing field; values are never echoed. */
  check(
    appType: string,
    settings: { credentials?: Record<string, unknown> | null; config?: Record<string, unknown> },
  ) {
    const validators = this.compiled.get(appType);
    if (!validators) return;
    const errors: ProblemFieldError[] = [];
    if (settings.credentials && !validators.credentials(settings.credentials))
      errors.push(
        ...schemaFieldErrors(
          validators.credentials.errors ?? [],
          'body.credentials',
          'is not a credential of this app type',
        ),
      );
    if (settings.config && !validators.config(settings.config))
      errors.push(
        ...schemaFieldErrors(
          validators.config.errors ?? [],
          'body.config',
          'is not a config field of this app type',
        ),
      );
    if (errors.length > 0) {
      throw unprocessable(
        'invalid_app_settings',
        `The credentials or config do not match the ${appType} app type (GET /api/v1/app-types/${appType} describes them)`,
        errors,
      );
    }
  }

  /** Whether an app of this type needs credentials to work (its schema requires a field). */
  needsCredentials(appType: string): boolean {
    const validate = this.compiled.get(appType)?.credentials;
    return validate ? !validate({}) : true;
  }
}
