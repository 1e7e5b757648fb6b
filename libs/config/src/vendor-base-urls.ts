import type { z } from 'zod';
import { envUrl } from './env-fields';

type OptionalUrl = z.ZodOptional<ReturnType<typeof envUrl>>;
type BaseUrlFields<T extends string> = { [K in T as `VENDOR_BASE_URL_${Uppercase<K>}`]: OptionalUrl };

const variable = (appType: string) => `VENDOR_BASE_URL_${appType.toUpperCase()}`;

/**
 * `VENDOR_BASE_URL_<APP TYPE>` for each app type: a proxy, a vendor sandbox or a local test
 * server in place of the vendor's own host; unset means the vendor's host.
 */
export function vendorBaseUrlFields<const T extends string>(appTypes: readonly T[]): BaseUrlFields<T> {
  return Object.fromEntries(
    appTypes.map((appType) => [
      variable(appType),
      envUrl(['http', 'https'])
        .optional()
        .describe(
          `A proxy, sandbox or local test server in place of ${appType}'s API host; unset: the vendor's own host.`,
        ),
    ]),
  ) as BaseUrlFields<T>;
}

/** The base URLs that are set, by app type, as the vendor clients take them. */
export function vendorBaseUrlsOf(
  config: Readonly<Record<string, unknown>>,
  appTypes: readonly string[],
): Partial<Record<string, string>> {
  return Object.fromEntries(
    appTypes
      .map((appType) => [appType, config[variable(appType)]] as const)
      .filter((entry): entry is readonly [string, string] => typeof entry[1] === 'string'),
  );
}
