import type { DataSource } from 'typeorm';
import {
  badRequest,
  invalidField,
  isCredentialsUnreadable,
  notFound,
  type UnreadableReason,
} from '../http/api-errors';
import { requireId } from '../http/ids';
import { returnedRows } from '../database/returned-rows';
import type { CredentialCipher } from '../apps/credential-cipher';
import { secretRequiredForNewHost, type TenantUrlPolicy } from '../apps/tenant-urls';
import type { AlertWindowMinutes, PlanAlertView, PutPlanAlertBody } from './plan-alert.dto';
import { alertWindowMinutes, windowStartOf } from './alert-windows';

/** What the service reads of a row; the sender reads its own columns. */
interface AlertRow {
  plan_id: string;
  url: string;
  window_minutes: number;
  enabled: boolean;
  last_window_end: Date;
  last_sent_window_end: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
  failures: number;
  next_attempt_at: Date | null;
  windows_sent: string;
  alerts_sent: string;
  windows_dropped: string;
  created_at: Date;
  updated_at: Date;
}

const iso = (value: Date | null) => (value === null ? null : value.toISOString());

function viewOf(row: AlertRow): PlanAlertView {
  return {
    planId: row.plan_id,
    url: row.url,
    windowMinutes: row.window_minutes as AlertWindowMinutes,
    enabled: row.enabled,
    signingSecretSet: true,
    status: {
      lastWindowEnd: row.last_window_end.toISOString(),
      lastSentWindowEnd: iso(row.last_sent_window_end),
      lastError: row.last_error,
      lastErrorAt: iso(row.last_error_at),
      failures: row.failures,
      nextAttemptAt: iso(row.next_attempt_at),
      windowsSent: Number(row.windows_sent),
      alertsSent: Number(row.alerts_sent),
      windowsDropped: Number(row.windows_dropped),
    },
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The associated data a plan alert's secret is sealed with: a row's ciphertext opens for its own plan only. */
export const alertSecretContext = (planId: string) => `plan-alert:${planId}`;

const planNotFound = (planId: string) => notFound('tracking plan', planId);
const alertNotFound = (planId: string) => notFound('tracking plan alert', planId);

/**
 * A tracking plan's violation alert (docs/tracking-plans.md, "Alerts"): where each window's
 * counts are POSTed, how long a window is, and how the sending goes.
 */
export class PlanAlertService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly urls: TenantUrlPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Every alert whose signing secret this process's keys cannot open (at start, for the log
   * that tells the operator once, with app credentials and warehouse passwords), a page at a time.
   */
  async unreadableSecrets(): Promise<{ planAlert: string; keyId: string; reason: UnreadableReason }[]> {
    const found: { planAlert: string; keyId: string; reason: UnreadableReason }[] = [];
    const pageSize = 500;
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const page = (await this.dataSource.query(
        `SELECT plan_id, secret_ciphertext, secret_key_id FROM tracking_plan_alerts
         WHERE plan_id > $1 ORDER BY plan_id LIMIT $2`,
        [after, pageSize],
      )) as { plan_id: string; secret_ciphertext: string; secret_key_id: string }[];
      for (const row of page) {
        try {
          this.cipher.open(
            { ciphertext: row.secret_ciphertext, keyId: row.secret_key_id },
            alertSecretContext(row.plan_id),
          );
        } catch (error) {
          if (!isCredentialsUnreadable(error)) throw error;
          found.push({
            planAlert: row.plan_id,
            keyId: row.secret_key_id,
            reason: error.details?.reason as UnreadableReason,
          });
        }
      }
      const last = page.at(-1);
      if (!last || page.length < pageSize) return found;
      after = last.plan_id;
    }
  }

  async get(accountId: string, planId: string): Promise<PlanAlertView> {
    const id = requireId('tracking plan', planId);
    const [row] = (await this.dataSource.query(
      'SELECT * FROM tracking_plan_alerts WHERE plan_id = $1 AND account_id = $2',
      [id, accountId],
    )) as AlertRow[];
    if (!row) {
      await this.assertPlan(accountId, id);
      throw alertNotFound(planId);
    }
    return viewOf(row);
  }

  /**
   * Creates or replaces the plan's alert. A new alert, a new window length, or enabling a
   * disabled one starts at the window under way: windows before it are not sent.
   */
  async put(accountId: string, planId: string, body: PutPlanAlertBody): Promise<PlanAlertView> {
    const id = requireId('tracking plan', planId);
    if (!alertWindowMinutes.includes(body.windowMinutes))
      throw invalidField('body.windowMinutes', `must be one of ${alertWindowMinutes.join(', ')}`);
    await this.urls.assertAllowed({ url: body.url }, 'body');
    const start = new Date(windowStartOf(this.now(), body.windowMinutes));
    return this.dataSource.transaction(async (tx) => {
      await this.assertPlan(accountId, id, tx);
      const [existing] = (await tx.query('SELECT * FROM tracking_plan_alerts WHERE plan_id = $1 FOR UPDATE', [
        id,
      ])) as AlertRow[];
      if (!existing) {
        if (body.signingSecret === undefined)
          throw badRequest('validation_failed', 'The request is not valid', [
            { path: 'body.signingSecret', message: 'is required when the alert is created' },
          ]);
        const sealed = this.cipher.seal({ signingSecret: body.signingSecret }, alertSecretContext(id));
        const [row] = (await tx.query(
          `INSERT INTO tracking_plan_alerts
             (plan_id, account_id, url, window_minutes, enabled, secret_ciphertext, secret_key_id, last_window_end)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
          [id, accountId, body.url, body.windowMinutes, body.enabled, sealed.ciphertext, sealed.keyId, start],
        )) as AlertRow[];
        // RETURNING * of the one row written.
        return viewOf(row as AlertRow);
      }
      // The secret signs for the host it was entered with (docs/management-api.md, "Secrets follow their host").
      if (new URL(body.url).origin !== new URL(existing.url).origin && body.signingSecret === undefined)
        throw secretRequiredForNewHost('body.url', 'The new url');
      const sealed =
        body.signingSecret === undefined
          ? undefined
          : this.cipher.seal({ signingSecret: body.signingSecret }, alertSecretContext(id));
      const restart = existing.window_minutes !== body.windowMinutes || (!existing.enabled && body.enabled);
      // A restart clears the claim token: a send begun before it cannot complete over the new windows.
      const [row] = returnedRows<AlertRow>(
        await tx.query(
          `UPDATE tracking_plan_alerts SET
           url = $2, window_minutes = $3, enabled = $4,
           secret_ciphertext = COALESCE($5, secret_ciphertext), secret_key_id = COALESCE($6, secret_key_id),
           last_window_end = CASE WHEN $7 THEN $8 ELSE last_window_end END,
           claim_token = CASE WHEN $7 THEN NULL ELSE claim_token END,
           claimed_until = CASE WHEN $7 THEN NULL ELSE claimed_until END,
           failures = CASE WHEN $7 THEN 0 ELSE failures END,
           next_attempt_at = CASE WHEN $7 THEN NULL ELSE next_attempt_at END,
           updated_at = now()
         WHERE plan_id = $1 RETURNING *`,
          [
            id,
            body.url,
            body.windowMinutes,
            body.enabled,
            sealed?.ciphertext ?? null,
            sealed?.keyId ?? null,
            restart,
            start,
          ],
        ),
      );
      return viewOf(row as AlertRow);
    });
  }

  async remove(accountId: string, planId: string): Promise<void> {
    const id = requireId('tracking plan', planId);
    const deleted = returnedRows<{ plan_id: string }>(
      await this.dataSource.query(
        'DELETE FROM tracking_plan_alerts WHERE plan_id = $1 AND account_id = $2 RETURNING plan_id',
        [id, accountId],
      ),
    );
    if (deleted.length === 0) {
      await this.assertPlan(accountId, id);
      throw alertNotFound(planId);
    }
  }

  private async assertPlan(
    accountId: string,
    planId: string,
    manager: Pick<DataSource, 'query'> = this.dataSource,
  ): Promise<void> {
    const found = (await manager.query('SELECT 1 FROM tracking_plans WHERE id = $1 AND account_id = $2', [
      planId,
      accountId,
    ])) as unknown[];
    if (found.length === 0) throw planNotFound(planId);
  }
}
