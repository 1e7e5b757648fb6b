import type { Connector, ConnectorHttpOptions, StreamSpec } from '@pipeline/connectors';
import type { Forwarder, SubjectDeletionClient, VendorClientOptions } from '@pipeline/destinations';
import { consentGroupFor, type ConsentGroup, type DestinationCategory } from '@pipeline/events';
import { Type, type Static, type TProperties, type TSchema, type TString } from '@sinclair/typebox';

export type AppRole = 'source' | 'destination' | 'warehouse';

/** What an app of this type imports on a schedule (the sync engine), one warehouse table per stream. */
export interface ImportSide<Credentials, Config> {
  streams: readonly StreamSpec[];
  connector: (app: { credentials: Credentials; config: Config }, http: ConnectorHttpOptions) => Connector;
}

/** Where events are forwarded to: the category decides the consent group. */
export interface ForwardSide {
  category: DestinationCategory;
  forwarder: (client: VendorClientOptions) => Forwarder;
  /**
   * The vendor's user deletion client, for privacy regulations. Absent when the vendor has no deletion API:
   * a regulation reports the destination `not_supported`.
   */
  deletes?: (client: VendorClientOptions) => SubjectDeletionClient;
}

/** Where the account's warehouse data is loaded: the customer's own server of this engine. */
export interface WarehouseSide {
  engine: 'postgres' | 'clickhouse';
}

/**
 * One app type: everything the services know about it. Roles and the consent group are
 * derived from the parts present, so they cannot disagree with what the code can do.
 */
export interface AppTypeDefinition<C extends TSchema = TSchema, G extends TSchema = TSchema> {
  appType: string;
  name: string;
  /** Shown to users (GET /api/v1/app-types): what it does, and its limits. */
  description: string;
  /** JSON Schema of the app's `credentials` (an object, or a union of objects); secret fields carry `writeOnly: true`. */
  credentials: C;
  /** JSON Schema of the app's `config`. */
  config: G;
  /** A valid app of this type, for docs and tests. */
  example: { credentials: Static<C>; config: Static<G> };
  /**
   * The vendor host an operator may replace with VENDOR_BASE_URL_<APP TYPE> (a proxy, a
   * sandbox, a test server). Absent when there is no vendor host (a webhook's URL is the tenant's).
   */
  vendorHost?: string;
  /**
   * Where the credentials go when the tenant chooses it (a URL; its origin counts): a
   * Segment-compatible endpoint, a webhook, a Braze instance, a shop. `global` is an
   * integration's config.global, for the settings an integration may override. Absent when
   * the host is the vendor's alone. A change of this origin must come with the credentials
   * again (docs/management-api.md, "Secrets follow their host").
   */
  recipient?: (config: Static<G>, global?: Record<string, unknown>) => string | undefined;
  /** A source that receives events from the browser SDK or the tracking API, not by import. */
  tracking?: true;
  imports?: ImportSide<Static<C>, Static<G>>;
  forwards?: ForwardSide;
  /** A warehouse the customer owns (neither source nor destination: the account's data lands there). */
  warehouse?: WarehouseSide;
}

/** Typed from its schemas, stored without them: what the registry and its readers see. */
export type AnyAppType = AppTypeDefinition<TSchema, TSchema> & {
  imports?: ImportSide<Record<string, unknown>, Record<string, unknown>>;
  recipient?: (config: Record<string, unknown>, global?: Record<string, unknown>) => string | undefined;
};

/** Declares an app type, checking `example` and the factories against its schemas. */
export function defineAppType<C extends TSchema, G extends TSchema>(
  definition: AppTypeDefinition<C, G>,
): AnyAppType {
  return definition as unknown as AnyAppType;
}

export function rolesOf(definition: AnyAppType): AppRole[] {
  return [
    ...(definition.tracking || definition.imports ? (['source'] as const) : []),
    ...(definition.forwards ? (['destination'] as const) : []),
    ...(definition.warehouse ? (['warehouse'] as const) : []),
  ];
}

export function consentGroupOf(definition: AnyAppType): ConsentGroup | null {
  return definition.forwards ? consentGroupFor[definition.forwards.category] : null;
}

/** A secret credential field: write-only, never returned, never echoed in an error. */
export const secret = (
  description: string,
  options: { pattern?: string; maxLength?: number } = {},
): TString =>
  Type.String({
    minLength: 1,
    maxLength: options.maxLength ?? 4096,
    writeOnly: true,
    description,
    ...(options.pattern ? { pattern: options.pattern } : {}),
  });

/** A non-secret text field. */
export const text = (
  description: string,
  options: { pattern?: string; maxLength?: number; format?: string } = {},
): TString => Type.String({ minLength: 1, maxLength: options.maxLength ?? 1024, description, ...options });

/** An object schema that refuses fields it does not name (a typo must not pass silently). */
export const fields = <P extends TProperties>(properties: P, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });
