import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

/**
 * A DNS name (letters, digits, inner hyphens; 253 characters) or an IP address, and nothing a
 * driver could read as more: no '/' (a socket path), ',' (a host list), '=' or spaces
 * (libpq key=value pairs), no leading '-' (an option). The connection guard checks again.
 */
export const warehouseHostPattern =
  '^(?:(?=.{1,253}\\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?|[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*)$';

/** A plain lowercase identifier: used unquoted in SQL, never mistaken for another name. */
export const warehouseSchemaNamePattern = '^[a-z_][a-z0-9_]{0,62}$';

/** Names PostgreSQL keeps (63 bytes) without control characters. */
const pgName = (description: string) =>
  text(description, { pattern: '^[^\\u0000-\\u001f\\u007f]+$', maxLength: 63 });

export const postgresWarehouseDefaults = { port: 5432, schema: 'pipeline', tlsMode: 'verify-full' } as const;

export const postgresWarehouse = defineAppType({
  appType: 'postgres_warehouse',
  name: 'PostgreSQL warehouse (your own server)',
  description:
    'Loads the account’s events, users, groups and imported streams into your own PostgreSQL server. The host must be public: loopback, private, link-local and other internal addresses are refused at every connection. Use a role that may create in one schema and nothing else (docs/warehouses.md, "Customer-owned PostgreSQL").',
  credentials: fields({ password: secret('The password of the warehouse role.', { maxLength: 1024 }) }),
  config: fields({
    host: text('The server’s DNS name or public IP address (no URL, no socket path).', {
      pattern: warehouseHostPattern,
      maxLength: 253,
    }),
    port: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65535,
        default: postgresWarehouseDefaults.port,
        description: 'TCP port.',
      }),
    ),
    database: pgName('The database to load into.'),
    user: pgName('The role to log in as; it needs CONNECT on the database and CREATE on the schema.'),
    schema: Type.Optional(
      text('The schema the tables go to; created when missing and the role may create it.', {
        pattern: warehouseSchemaNamePattern,
        maxLength: 63,
      }),
    ),
    tlsMode: Type.Optional(
      Type.Union([Type.Literal('disable'), Type.Literal('require'), Type.Literal('verify-full')], {
        default: postgresWarehouseDefaults.tlsMode,
        description:
          '`verify-full` (default): TLS, certificate and host name verified; `require`: TLS without verification; `disable`: no TLS.',
      }),
    ),
  }),
  example: {
    credentials: { password: 'a-long-random-password' },
    config: {
      host: 'warehouse.example.com',
      port: 5432,
      database: 'analytics',
      user: 'pipeline_loader',
      schema: 'pipeline',
      tlsMode: 'verify-full',
    },
  },
  // The password goes to this host and port: moving the app elsewhere needs it entered again.
  recipient: (config) =>
    config.host
      ? `postgres://${config.host.toLowerCase()}:${config.port ?? postgresWarehouseDefaults.port}`
      : undefined,
  warehouse: { engine: 'postgres' },
});
