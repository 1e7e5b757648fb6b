import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Violation alerts of a tracking plan (docs/tracking-plans.md, "Alerts"): at most one per plan,
 * going with it. `last_window_end` is the end of the last window done (sent, empty or given up):
 * the next is [last_window_end, + window_minutes). A sender claims a row by writing
 * `claimed_until` and a fresh `claim_token`, and only a completion carrying that token advances
 * it, so two control planes never send the same window at once, and a config change (which
 * clears the token) is never overwritten by a send that began before it. The signing secret is
 * sealed like an app's credentials (CredentialCipher, associated data `plan-alert:<plan id>`).
 */
export class TrackingPlanAlerts1796600000000 implements MigrationInterface {
  name = 'TrackingPlanAlerts1796600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tracking_plan_alerts (
        plan_id uuid PRIMARY KEY REFERENCES tracking_plans(id) ON DELETE CASCADE,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        url text NOT NULL,
        window_minutes integer NOT NULL
          CHECK (window_minutes IN (1, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720, 1440)),
        enabled boolean NOT NULL,
        secret_ciphertext text NOT NULL,
        secret_key_id text NOT NULL,
        last_window_end timestamptz NOT NULL,
        claimed_until timestamptz,
        claim_token uuid,
        failures integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz,
        last_sent_window_end timestamptz,
        last_error text,
        last_error_at timestamptz,
        windows_sent bigint NOT NULL DEFAULT 0,
        alerts_sent bigint NOT NULL DEFAULT 0,
        windows_dropped bigint NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    // The sender's scan: enabled alerts, the oldest window first.
    await queryRunner.query(
      'CREATE INDEX tracking_plan_alerts_due ON tracking_plan_alerts (last_window_end) WHERE enabled',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE tracking_plan_alerts');
  }
}
