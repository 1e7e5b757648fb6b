import type { ResourceState } from '../http/resource-state';
import type { AppRole } from './app.entity';

export interface AppListItem {
  /** @format uuid */
  id: string;
  /** @format uuid */
  accountId: string;
  /** App type identifier, a key of the app catalog (docs/management-api.md, "Resources and their rules"). */
  appType: string;
  displayName: string;
  role: AppRole[];
  state: ResourceState;
  errorMessage: string | null;
  /** @format date-time */
  lastSyncAt: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

export interface AppDetail extends AppListItem {
  permissions: string[];
  /** The connector configuration; values under secret-looking keys are masked. */
  config: Record<string, unknown>;
  consecutiveFailureCount: number;
  /** The credential fields that are set, every value masked; null when none were given. */
  credentials: Record<string, string> | null;
  /**
   * Present when credentials are stored but the service cannot open them (`credentials_unreadable`:
   * the encryption key that sealed them is missing or was replaced). The app delivers nothing
   * until an operator restores the key or the credentials are entered again.
   */
  credentialsError?: { code: 'credentials_unreadable'; message: string };
}

export interface CreateAppBody {
  appType: string;
  /**
   * Unique among the account's apps that are not deleted (case-insensitive).
   * @minLength 1
   * @maxLength 200
   */
  displayName: string;
  /**
   * Defaults to every role the app type supports.
   * @minItems 1
   * @maxItems 2
   */
  role?: AppRole[];
  /** Secrets of the connection. With them the app is `active`, without `inactive`. Never returned. */
  credentials?: Record<string, unknown>;
  config?: Record<string, unknown>;
}

export interface UpdateAppBody {
  /**
   * @minLength 1
   * @maxLength 200
   */
  displayName?: string;
  /** Replaces the credentials (the app becomes `active`); null removes them (`inactive`). */
  credentials?: Record<string, unknown> | null;
  /** Replaces the configuration. */
  config?: Record<string, unknown>;
  /**
   * @minItems 1
   * @maxItems 2
   */
  role?: AppRole[];
}
