import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';
import { warehouseHostPattern } from './postgres-warehouse';

/**
 * A ClickHouse database name used unquoted: a lowercase letter or '_' first, then lowercase
 * letters, digits and '_', 63 at most (the account's placement names it as its schema, a plain
 * lowercase identifier on every engine); never one of the server's own databases (`system`,
 * `information_schema`).
 */
export const clickhouseDatabaseNamePattern = '^(?!(?:system|information_schema)$)[a-z_][a-z0-9_]{0,62}$';

export const clickhouseWarehouseDefaults = { port: 8443, tlsMode: 'verify-full' } as const;

export const clickhouseWarehouse = defineAppType({
  appType: 'clickhouse_warehouse',
  name: 'ClickHouse warehouse (your own server)',
  description:
    'Loads the account’s events, users, groups and imported streams into a database of your own ClickHouse server, over its HTTP interface. The host must be public: loopback, private, link-local and other internal addresses are refused at every connection. Use a user that may create, alter, insert into, select from and drop tables in that one database and nothing else (docs/warehouses.md, "Your own ClickHouse").',
  credentials: fields({ password: secret('The password of the ClickHouse user.', { maxLength: 1024 }) }),
  config: fields({
    host: text('The server’s DNS name or public IP address (no URL, no path).', {
      pattern: warehouseHostPattern,
      maxLength: 253,
    }),
    port: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65535,
        default: clickhouseWarehouseDefaults.port,
        description: 'The HTTP(S) interface’s TCP port (8443 for HTTPS, 8123 for plain HTTP).',
      }),
    ),
    database: text(
      'The database the account’s tables go in; created when missing and the user may create it. A plain lowercase identifier: a-z or _ first, then a-z, 0-9 and _ (63 at most), not system or information_schema.',
      { pattern: clickhouseDatabaseNamePattern, maxLength: 63 },
    ),
    user: text('The ClickHouse user to log in as (see the grant script).', {
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      maxLength: 63,
    }),
    tlsMode: Type.Optional(
      Type.Union([Type.Literal('disable'), Type.Literal('require'), Type.Literal('verify-full')], {
        default: clickhouseWarehouseDefaults.tlsMode,
        description:
          '`verify-full` (default): HTTPS, certificate and host name verified; `require`: HTTPS without verification; `disable`: plain HTTP.',
      }),
    ),
  }),
  example: {
    credentials: { password: 'a-long-random-password' },
    config: {
      host: 'clickhouse.example.com',
      port: 8443,
      database: 'pipeline',
      user: 'pipeline_loader',
      tlsMode: 'verify-full',
    },
  },
  // The password goes to this host and port: moving the app elsewhere needs it entered again.
  recipient: (config) =>
    config.host
      ? `clickhouse://${config.host.toLowerCase()}:${config.port ?? clickhouseWarehouseDefaults.port}`
      : undefined,
  warehouse: { engine: 'clickhouse' },
});
