import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Who calls the internal endpoints. Ingestion resolves write keys and never sees a credential;
 * each forwarding delivery consumer looks tenants up and sees only its own app type's
 * credentials. One token per caller: a leaked ingestion token opens no vendor account, and a
 * leaked webhook consumer's token opens no Amplitude one.
 */
export type InternalCaller =
  { caller: 'ingestion' } | { caller: 'delivery'; appType: string } | { caller: 'warehouse' };

/** What an internal endpoint requires (tsoa `@Security('internal_token', [scope])`). */
export type InternalScope =
  | 'write_keys.resolve'
  | 'write_keys.lookup'
  | 'warehouses.resolve'
  | 'warehouses.report'
  | 'regulations.subjects'
  | 'tracking_plans.versions';

export const INGESTION_TOKEN_VARIABLE = 'INTERNAL_TOKEN_INGESTION';

/**
 * The warehouse consumer's token (`delivery --destination warehouse`): the only caller that is
 * handed warehouse passwords. Named like the forwarding consumers' variables, which it is not one of.
 */
export const WAREHOUSE_TOKEN_VARIABLE = 'INTERNAL_TOKEN_DELIVERY_WAREHOUSE';

/** `INTERNAL_TOKEN_DELIVERY_<APP TYPE>`: the token of `delivery --destination <app type>`. */
export const deliveryTokenVariable = (appType: string) => `INTERNAL_TOKEN_DELIVERY_${appType.toUpperCase()}`;

const MIN_TOKEN_LENGTH = 32;
const token = () => z.string().min(MIN_TOKEN_LENGTH, `must have at least ${MIN_TOKEN_LENGTH} characters`);

type DeliveryTokenFields<T extends string> = {
  [K in T as `INTERNAL_TOKEN_DELIVERY_${Uppercase<K>}`]: z.ZodOptional<ReturnType<typeof token>>;
};

/**
 * The control plane's internal tokens, one variable per caller: each caller's Deployment mounts
 * its own Secret key as its INTERNAL_SERVICE_TOKEN, the control plane mounts them all, and no
 * value is written twice. Ingestion's is required (it was the one shared token's role before).
 */
export function internalTokenFields<const T extends string>(forwardingAppTypes: readonly T[]) {
  const delivery = Object.fromEntries(
    forwardingAppTypes.map((appType) => [
      deliveryTokenVariable(appType),
      token()
        .optional()
        .describe(
          `The token \`delivery --destination ${appType}\` presents (its \`INTERNAL_SERVICE_TOKEN\`): \`/internal/v1/write-keys/lookup\` only, answered with ${appType} destinations and credentials only. Unset: that consumer is refused.`,
        ),
    ]),
  ) as DeliveryTokenFields<T>;
  return {
    INTERNAL_TOKEN_INGESTION: token().describe(
      "The token ingestion presents (its `INTERNAL_SERVICE_TOKEN`): `/internal/v1/write-keys/resolve`, `/internal/v1/regulated-subjects` and `/internal/v1/tracking-plan-versions` only, never a destination's credentials (32+ characters).",
    ),
    ...delivery,
    [WAREHOUSE_TOKEN_VARIABLE]: token()
      .optional()
      .describe(
        "The token `delivery --destination warehouse` presents (its `INTERNAL_SERVICE_TOKEN`): `/internal/v1/warehouses/resolve` (an account's warehouse with its password and the function its warehouse binds) and `/internal/v1/warehouses/{id}/status` only. Unset: the warehouse consumer is refused.",
      ),
  } as const;
}

/** The operator API's token: none of the internal callers may hold it. */
export const OPERATOR_TOKEN_VARIABLE = 'OPERATOR_API_TOKEN';

/**
 * Two callers with one token could not be told apart, and a service holding the operator's
 * token could manage warehouses: the config refuses both.
 */
export function duplicateTokenProblems(
  config: Readonly<Record<string, unknown>>,
  forwardingAppTypes: readonly string[],
): { variable: string; message: string }[] {
  const seen = new Map<string, string>();
  const problems: { variable: string; message: string }[] = [];
  for (const variable of [
    INGESTION_TOKEN_VARIABLE,
    ...forwardingAppTypes.map(deliveryTokenVariable),
    WAREHOUSE_TOKEN_VARIABLE,
    OPERATOR_TOKEN_VARIABLE,
  ]) {
    const value = config[variable];
    if (typeof value !== 'string') continue;
    const first = seen.get(value);
    if (first)
      problems.push({ variable, message: `must differ from ${first}: every caller has its own token` });
    else seen.set(value, variable);
  }
  return problems;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * The configured tokens, kept as SHA-256 digests only, and the caller each belongs to. A
 * presented token is compared with every entry in constant time, so neither the match nor its
 * position shows in the answer time.
 */
export class InternalTokens {
  private readonly entries: { digest: Buffer; caller: InternalCaller }[];

  constructor(tokens: readonly { token: string; caller: InternalCaller }[]) {
    this.entries = tokens.map((entry) => ({ digest: digest(entry.token), caller: entry.caller }));
  }

  /** From the control plane's config: ingestion's token and each forwarding kind's that is set. */
  static fromConfig(
    config: Readonly<Record<string, unknown>>,
    forwardingAppTypes: readonly string[],
  ): InternalTokens {
    const tokens: { token: string; caller: InternalCaller }[] = [];
    const ingestion = config[INGESTION_TOKEN_VARIABLE];
    if (typeof ingestion === 'string') tokens.push({ token: ingestion, caller: { caller: 'ingestion' } });
    for (const appType of forwardingAppTypes) {
      const value = config[deliveryTokenVariable(appType)];
      if (typeof value === 'string') tokens.push({ token: value, caller: { caller: 'delivery', appType } });
    }
    const warehouse = config[WAREHOUSE_TOKEN_VARIABLE];
    if (typeof warehouse === 'string') tokens.push({ token: warehouse, caller: { caller: 'warehouse' } });
    return new InternalTokens(tokens);
  }

  /** The caller `presented` belongs to, or null. */
  callerOf(presented: string): InternalCaller | null {
    const candidate = digest(presented);
    let found: InternalCaller | null = null;
    for (const entry of this.entries) {
      // No early return: every entry is compared whatever matched.
      if (timingSafeEqual(candidate, entry.digest)) found = entry.caller;
    }
    return found;
  }
}

/** Whether `caller` may use an endpoint that requires `scope`. */
export function callerHasScope(caller: InternalCaller, scope: string): boolean {
  if (scope === 'write_keys.resolve') return caller.caller === 'ingestion';
  if (scope === 'write_keys.lookup') return caller.caller === 'delivery';
  if (scope === 'warehouses.resolve' || scope === 'warehouses.report') return caller.caller === 'warehouse';
  // Every service that delivers or accepts events decides them by the account's regulations.
  if (scope === 'regulations.subjects') return true;
  // Ingestion holds events to the version a key binds; it compiles that version from here.
  if (scope === 'tracking_plans.versions') return caller.caller === 'ingestion';
  return false;
}
