import type { WarehouseOwner, WarehouseStatus } from '../warehouse-registry/warehouse.entity';

/**
 * What a tenant is told of a platform warehouse's trouble: a fixed text per status. The
 * driver's text that the consumer and the operator's probe record names the operator's hosts,
 * addresses, users and databases (`connect ECONNREFUSED 10.0.3.7:5432`), and every account on
 * that warehouse would read it; the operator reads it in the operator API and the logs.
 */
export const PLATFORM_STATUS_DETAIL: Readonly<Record<Exclude<WarehouseStatus, 'active'>, string>> = {
  unavailable: 'The service’s warehouse is not answering; loading waits and resumes once it does.',
  misconfigured:
    'The service’s warehouse refuses its connection; the records wait until the operator fixes it.',
};

/**
 * A platform warehouse whose stored password the control plane's keys cannot open: the
 * tenant learns that, and what fixes it, but not the key's name (that is the operator's, in
 * the log and the operator API).
 */
export const PLATFORM_UNREADABLE_DETAIL =
  'credentials_unreadable: the service cannot open this warehouse’s stored password; the operator must restore the key it was sealed with, or set the password again.';

/**
 * The status detail an account is shown: its own server's as recorded (the account set the
 * host and the password, so what was met there is its to read), a platform warehouse's as
 * its fixed category.
 */
export function tenantStatusDetail(
  owner: WarehouseOwner,
  status: WarehouseStatus,
  recorded: string | null,
): string | null {
  if (owner === 'customer') return recorded;
  if (status === 'active') return null;
  if (status === 'misconfigured' && recorded?.startsWith('credentials_unreadable: '))
    return PLATFORM_UNREADABLE_DETAIL;
  return PLATFORM_STATUS_DETAIL[status];
}
