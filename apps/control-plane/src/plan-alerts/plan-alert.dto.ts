// The management API's violation-alert bodies and answers (docs/tracking-plans.md, "Alerts").

/** Window lengths in minutes: each divides a day, so windows align to UTC multiples of it. */
export type AlertWindowMinutes = 1 | 5 | 10 | 15 | 30 | 60 | 120 | 180 | 240 | 360 | 720 | 1440;

export interface PutPlanAlertBody {
  /**
   * The http(s) URL each window's alerts are POSTed to; refused (422 `url_not_allowed`) when the
   * egress policy would not send to it.
   * @maxLength 2048
   */
  url: string;
  windowMinutes: AlertWindowMinutes;
  enabled: boolean;
  /**
   * The key of the HMAC-SHA256 `X-Signature` header, as the webhook destination signs. Required
   * when the alert is created and when `url` moves to another origin; absent: the stored one.
   * Never answered.
   * @minLength 16
   * @maxLength 256
   */
  signingSecret?: string;
}

export interface PlanAlertStatus {
  /** The end of the last window done (sent, empty or given up); the next starts there. */
  lastWindowEnd: string;
  /** The end of the last window whose alerts the URL accepted; null before the first. */
  lastSentWindowEnd: string | null;
  /** The last failure (`http_503`, `timeout: ...`, `address_refused`, ...); null once a window is sent. */
  lastError: string | null;
  lastErrorAt: string | null;
  /** Failed claims of the current window; at the limit the window is given up. */
  failures: number;
  /** When the current window is tried again after a failure. */
  nextAttemptAt: string | null;
  windowsSent: number;
  /** Alerts (one per event, code and path) the URL accepted. */
  alertsSent: number;
  /** Windows given up after repeated failures or a refusal. */
  windowsDropped: number;
}

export interface PlanAlertView {
  planId: string;
  url: string;
  windowMinutes: AlertWindowMinutes;
  enabled: boolean;
  /** Always true: a secret is stored; it is never answered. */
  signingSecretSet: boolean;
  status: PlanAlertStatus;
  createdAt: string;
  updatedAt: string;
}

export interface PlanAlertAnswer {
  data: PlanAlertView;
}
