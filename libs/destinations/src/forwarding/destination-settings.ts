/** A destination whose config or credentials cannot work: no request is made, nothing is retried. */
export class InvalidConfig extends Error {
  override readonly name = 'InvalidConfig';
}

/** A non-empty string field of a credentials or config object, or InvalidConfig naming it. */
export function requiredText(source: Record<string, unknown>, field: string, where: string): string {
  const value = source[field];
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidConfig(`${where}.${field} is required`);
  }
  return value.trim();
}

export function optionalText(
  source: Record<string, unknown>,
  field: string,
  where: string,
): string | undefined {
  const value = source[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new InvalidConfig(`${where}.${field} must be a string`);
  return value.trim();
}

/**
 * The vendor host for `appConfig.region`, or InvalidConfig for a region the vendor does not
 * have: sending to the wrong region loses the data silently at several vendors.
 */
export function regionalHost(
  appConfig: Record<string, unknown>,
  hosts: Readonly<Record<string, string>> & { default: string },
): string {
  const region = optionalText(appConfig, 'region', 'appConfig');
  if (region === undefined) return hosts.default;
  const host = Object.hasOwn(hosts, region) ? hosts[region] : undefined;
  if (host === undefined) {
    const known = Object.keys(hosts).filter((key) => key !== 'default');
    throw new InvalidConfig(`appConfig.region must be one of ${known.join(', ')}, not "${region}"`);
  }
  return host;
}

/** An absolute http(s) URL without a trailing slash, or InvalidConfig. */
export function httpUrl(value: string, where: string, options: { httpsOnly?: boolean } = {}): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidConfig(`${where} is not a URL`);
  }
  const allowed = options.httpsOnly ? ['https:'] : ['https:', 'http:'];
  if (!allowed.includes(url.protocol)) {
    throw new InvalidConfig(`${where} must be an ${options.httpsOnly ? 'https' : 'http(s)'} URL`);
  }
  if (url.username || url.password) throw new InvalidConfig(`${where} must not carry credentials`);
  return value.replace(/\/+$/, '');
}
