import type { Logger } from '@pipeline/logger';
import type { UnreadableReason } from '../http/api-errors';
import { unreadableFix, type OnUnreadable } from './credential-cipher';

/** Stored credentials the configured keys cannot open: a warehouse's password or an app's credentials. */
export interface UnreadableCredential {
  keyId: string;
  reason: UnreadableReason;
  warehouse?: string;
  appId?: string;
  /** A tracking plan's violation alert: its signing secret (the plan's id). */
  planAlert?: string;
}

/** How many app ids one log line names; the count says how many there are. */
const APP_IDS_NAMED = 20;

/**
 * Tells the operator once about credentials the keys cannot open, instead of an error per
 * request or per metering pass: at start, one line per key with what it sealed and the fix;
 * after the start, the first time the cipher meets a key the start did not (credentials sealed
 * meanwhile by a control plane with other keys).
 */
export class UnreadableCredentialsLog {
  private started = false;

  constructor(private readonly logger: Logger) {}

  /** The cipher's hook: it calls it once per key and reason. */
  readonly onUnreadable: OnUnreadable = (keyId, reason) => {
    if (this.started)
      this.logger.error('stored credentials cannot be opened', {
        keyId,
        reason,
        fix: unreadableFix(keyId, reason),
      });
  };

  /**
   * What the start's audit found (WarehouseRegistry.auditSeals, AppService.unreadableCredentials,
   * PlanAlertService.unreadableSecrets).
   */
  startAudited(found: readonly UnreadableCredential[]): void {
    this.started = true;
    const byKey = new Map<
      string,
      { keyId: string; reason: UnreadableReason; sealed: UnreadableCredential[] }
    >();
    for (const credential of found) {
      const key = `${credential.reason}:${credential.keyId}`;
      const group = byKey.get(key) ?? { keyId: credential.keyId, reason: credential.reason, sealed: [] };
      group.sealed.push(credential);
      byKey.set(key, group);
    }
    for (const { keyId, reason, sealed } of byKey.values()) {
      const apps = sealed.flatMap((c) => (c.appId ? [c.appId] : []));
      this.logger.error('stored credentials cannot be opened', {
        keyId,
        reason,
        warehouses: sealed.flatMap((c) => (c.warehouse ? [c.warehouse] : [])),
        apps: apps.length,
        appIds: apps.slice(0, APP_IDS_NAMED),
        planAlerts: sealed.flatMap((c) => (c.planAlert ? [c.planAlert] : [])).slice(0, APP_IDS_NAMED),
        fix: unreadableFix(keyId, reason),
      });
    }
  }
}
