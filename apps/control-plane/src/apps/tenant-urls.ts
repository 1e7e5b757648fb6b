import { credentialsOriginOf } from '@pipeline/catalog';
import { tenantUrlChecker, type TenantUrlCheckOptions, type TenantUrlRefusal } from '@pipeline/egress';
import { unprocessable } from '../http/api-errors';
import type { ProblemFieldError } from '../http/problem';
import { urlsToCheck } from './settings-urls';

export { enteredAgain } from './settings-urls';

const messages: Record<TenantUrlRefusal, string> = {
  not_a_url: 'is not an absolute URL',
  scheme_not_allowed: 'must be an http or https URL',
  credentials_in_url: 'must not carry a user name or password',
  address_refused:
    'names a host that is not public (loopback, private, link-local, unique-local and other internal addresses are refused)',
};

/**
 * The rules for the hosts a tenant makes us send to (SECURITY.md, "Outbound requests"):
 * every URL in an app's, an integration's or a source's settings passes the egress policy when
 * it is saved (the guarded fetch checks it again at every connection), and a stored secret is
 * not sent to a host chosen after it was stored unless it is entered again.
 */
export class TenantUrlPolicy {
  private readonly check: ReturnType<typeof tenantUrlChecker>;

  constructor(options: TenantUrlCheckOptions = {}) {
    this.check = tenantUrlChecker(options);
  }

  /**
   * 422 `url_not_allowed` naming each refused URL's field (`body.config.global.url`), never its
   * addresses. `extra` adds origins derived from the settings (a shop's host), unless a URL of
   * the settings has that origin already.
   */
  async assertAllowed(settings: unknown, path: string, extra: [string, string][] = []): Promise<void> {
    const errors: ProblemFieldError[] = [];
    for (const [field, url] of urlsToCheck(settings, path, extra)) {
      const refusal = await this.check(url);
      if (refusal) errors.push({ path: field, message: messages[refusal] });
    }
    if (errors.length > 0) {
      throw unprocessable(
        'url_not_allowed',
        'A URL in the request is not one we send to: only public http(s) hosts are reached',
        errors,
      );
    }
  }
}

/**
 * 422 `secret_required_for_new_host`: the stored credentials of an app would go to `next`, an
 * origin other than the one they were entered for, and the request does not enter them again.
 */
export function secretRequiredForNewHost(field: string, what: string): Error {
  return unprocessable(
    'secret_required_for_new_host',
    `${what} moves where the app's stored credentials are sent; enter the credentials again in the same request (a stored secret is sent only to the host it was entered for)`,
    [{ path: field, message: 'changes the host the stored credentials are sent to' }],
  );
}

/** The origin an app's credentials reach with this config (and an integration's override). */
export const recipientOrigin = (
  appType: string,
  config: Record<string, unknown>,
  global?: Record<string, unknown>,
): string | null => credentialsOriginOf(appType, config, global);
