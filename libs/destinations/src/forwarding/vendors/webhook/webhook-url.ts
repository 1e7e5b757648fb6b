import { httpUrl, InvalidConfig, optionalText } from '../../destination-settings';

/**
 * The URL: the integration's config.global.url, which may only change the path of the app's,
 * or the app's. The signing secret was entered with the app's URL; an override on another
 * origin (one saved before the control plane checked it) is not sent to
 * (docs/management-api.md, "Secrets follow their host").
 */
export function webhookUrl(appConfig: Record<string, unknown>, global: Record<string, unknown>): string {
  const own = optionalText(appConfig, 'url', 'appConfig');
  const override = optionalText(global, 'url', 'config.global');
  if (!own) throw new InvalidConfig('appConfig.url is required');
  const url = httpUrl(own, 'the webhook url');
  if (override === undefined) return url;
  const overridden = httpUrl(override, 'config.global.url');
  if (new URL(overridden).origin !== new URL(url).origin)
    throw new InvalidConfig('config.global.url must be on the origin of the app’s url');
  return overridden;
}
