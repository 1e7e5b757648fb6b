import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

// The control plane's pure logic whose mistake would leak a secret, mix tenants or open the
// network: credential masking and sealing, the URLs a tenant saves, API-key and write-key
// tokens, scopes and the failed-key windows, write-key origins and limits, what a job shows and
// records, the schedule bounds, the errors a tenant sees, the warehouse names spliced into SQL,
// the operator's token, a warehouse's fields and masked password, which dead letters a
// tenant's replay or discard selects and how much of each the list shows, the start-up check
// that refuses an internal route admitting every internal caller, and how far an error's field
// is searched for in a body.
// Where such logic sat in a class doing I/O it lives in a file of its own.
export default mutationConfig({
  dir: 'apps/control-plane',
  mutate: [
    'apps/control-plane/src/apps/secret-masking.ts',
    'apps/control-plane/src/apps/settings-urls.ts',
    'apps/control-plane/src/apps/credential-cipher.ts',
    'apps/control-plane/src/auth/secret-token.ts',
    'apps/control-plane/src/auth/bearer-token.ts',
    'apps/control-plane/src/auth/failure-window.ts',
    'apps/control-plane/src/auth/scopes.ts',
    'apps/control-plane/src/auth/operator-token.ts',
    'apps/control-plane/src/write-keys/allowed-origins.ts',
    'apps/control-plane/src/write-keys/rate-limits.ts',
    'apps/control-plane/src/write-keys/write-key-view.ts',
    'apps/control-plane/src/jobs/retry-backoff.ts',
    'apps/control-plane/src/jobs/owner-status.ts',
    'apps/control-plane/src/jobs/job-view.ts',
    'apps/control-plane/src/sources/sync-schedule-format.ts',
    'apps/control-plane/src/work-queue/tenant-error.ts',
    'apps/control-plane/src/warehouse-access/warehouse-names.ts',
    'apps/control-plane/src/warehouse-access/connection-failure.ts',
    'apps/control-plane/src/warehouse-registry/warehouse-fields.ts',
    'apps/control-plane/src/dead-letters/dead-letter-selector.ts',
    'apps/control-plane/src/dead-letters/dead-letter-preview.ts',
    'apps/control-plane/src/auth/route-security.ts',
    'apps/control-plane/src/plan-violations/plan-violations-grouping.ts',
    'apps/control-plane/src/plan-alerts/alert-messages.ts',
    'apps/control-plane/src/plan-alerts/alert-windows.ts',
    ...functionRanges('apps/control-plane/src/warehouse-access/query-meter.ts', ['meteredBytes']),
    // How far the error handler searches a client's body for a field's place: a bug there is
    // the seconds per request a hostile body once cost.
    ...functionRanges('apps/control-plane/src/http/error-handler.ts', ['prefixInBody']),
  ],
  tests: [
    'src/apps/secret-masking.test.ts',
    'src/apps/settings-urls.test.ts',
    'src/apps/credential-cipher.test.ts',
    'src/apps/credential-keys.test.ts',
    'src/auth/secret-token.test.ts',
    'src/auth/bearer-token.test.ts',
    'src/auth/failure-window.test.ts',
    'src/auth/scopes.test.ts',
    'src/auth/operator-token.test.ts',
    'src/write-keys/allowed-origins.test.ts',
    'src/write-keys/rate-limits.test.ts',
    'src/write-keys/write-key-view.test.ts',
    'src/jobs/retry-backoff.test.ts',
    'src/jobs/owner-status.test.ts',
    'src/jobs/job-view.test.ts',
    'src/sources/sync-schedule-format.test.ts',
    'src/work-queue/tenant-error.test.ts',
    'src/work-queue/tenant-error-fields.test.ts',
    'src/warehouse-access/warehouse-names.test.ts',
    'src/warehouse-access/connection-failure.test.ts',
    'src/warehouse-registry/warehouse-fields.test.ts',
    'src/dead-letters/dead-letter-selector.test.ts',
    'src/dead-letters/dead-letter-preview.test.ts',
    'src/auth/route-security.test.ts',
    'src/plan-violations/plan-violations-grouping.test.ts',
    'src/plan-alerts/alert-messages.test.ts',
    'src/http/error-handler.test.ts',
  ],
  breakAt: 95,
});
