/** The API key a request was made with, and what it may do: never its secret. */
export interface MeKey {
  /** @format uuid */
  id: string;
  name: string;
  /** The first characters of the key, as `cli api-keys list` shows them. */
  keyPrefix: string;
  /** @format date-time */
  createdAt: string;
}

export interface MeAccount {
  /** @format uuid */
  id: string;
  name: string;
  /** The account's enabled features, e.g. `automations` (tasks). */
  features: string[];
}

/** Who is calling: the key, its scopes and its account. */
export interface Me {
  key: MeKey;
  /** The key's scopes; an endpoint needing another one answers 403 `insufficient_scope`. */
  scopes: string[];
  account: MeAccount;
}
