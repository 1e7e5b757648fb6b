import { consentGroupFor } from '@pipeline/events';
import type { TSchema } from '@sinclair/typebox';
import Ajv from 'ajv';
import fc from 'fast-check';
import { consentGroupOf, fields, rolesOf, secret, text, type AnyAppType } from './app-type';
import {
  appCatalog,
  appTypeDefinition,
  appTypes,
  baseUrlAppTypes,
  connectorFor,
  consentGroupOfAppType,
  credentialsOriginOf,
  deletionClientFor,
  deliveryKinds,
  destinationCategoryOf,
  forwarderFor,
  forwardingAppTypes,
  importingAppTypes,
  importTasksOf,
  isDeliveryKind,
  rolesOfAppType,
  warehouseAppTypes,
} from './catalog';

// What a tenant may configure for an app, checked as the control plane checks it (Ajv over the
// catalog's JSON Schemas, no coercion), where the credentials of each app type go, and what the
// catalog derives from its definitions. Pure: no vendor is called.

const ajv = new Ajv({ allErrors: true, strict: true });
const validators = new Map(
  appCatalog.map((d) => [
    d.appType,
    { credentials: ajv.compile(d.credentials), config: ajv.compile(d.config) },
  ]),
);
const definition = (appType: string): AnyAppType => {
  const found = appTypeDefinition(appType);
  if (!found) throw new Error(`no app type ${appType}`);
  return found;
};
const credentialsOk = (appType: string, value: unknown): boolean =>
  validators.get(appType)?.credentials(value) ?? false;
const configOk = (appType: string, value: unknown): boolean =>
  validators.get(appType)?.config(value) ?? false;

const examples = appCatalog.map((d) => {
  const { credentials, config } = d.example as { credentials: object; config: object };
  return [d.appType, credentials, config] as const;
});

describe('the catalog lists', () => {
  it('names every app type, its roles, category and consent group', () => {
    expect(
      appCatalog.map((d) => [d.appType, rolesOfAppType(d.appType), destinationCategoryOf(d.appType) ?? null]),
    ).toEqual([
      ['web_tracking', ['source'], null],
      ['shopify', ['source'], null],
      ['stripe', ['source'], null],
      ['hubspot', ['source', 'destination'], 'customer_data'],
      ['amplitude', ['destination'], 'product_analytics'],
      ['mixpanel', ['destination'], 'product_analytics'],
      ['braze', ['destination'], 'messaging'],
      ['customer_io', ['destination'], 'messaging'],
      ['segment', ['destination'], 'customer_data'],
      ['onesignal', ['destination'], 'push'],
      ['meta_conversions', ['destination'], 'advertising'],
      ['google_ads', ['destination'], 'advertising'],
      ['webhook', ['destination'], 'webhook'],
      ['postgres_warehouse', ['warehouse'], null],
      ['clickhouse_warehouse', ['warehouse'], null],
    ]);
    expect(appTypes).toEqual(appCatalog.map((d) => d.appType));
    for (const d of appCatalog) {
      expect(consentGroupOfAppType(d.appType)).toBe(d.forwards ? consentGroupFor[d.forwards.category] : null);
      expect(consentGroupOf(d)).toBe(consentGroupOfAppType(d.appType));
    }
    expect(consentGroupOfAppType('braze')).not.toBeNull();
    expect(consentGroupOfAppType('nope')).toBeNull();
    expect(rolesOfAppType('nope')).toEqual([]);
  });

  it('derives the forwarding, importing and delivery kinds', () => {
    expect(forwardingAppTypes).toEqual([
      'hubspot',
      'amplitude',
      'mixpanel',
      'braze',
      'customer_io',
      'segment',
      'onesignal',
      'meta_conversions',
      'google_ads',
      'webhook',
    ]);
    expect(importingAppTypes).toEqual(['shopify', 'stripe', 'hubspot']);
    expect(deliveryKinds).toEqual(['log', 'warehouse', ...forwardingAppTypes]);
    expect(['log', 'warehouse', 'webhook', 'stripe', 'web_tracking', ''].map(isDeliveryKind)).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it('takes an operator base URL only for app types with a vendor host', () => {
    expect(baseUrlAppTypes).toEqual({
      forwarding: [
        'hubspot',
        'amplitude',
        'mixpanel',
        'braze',
        'customer_io',
        'segment',
        'onesignal',
        'meta_conversions',
        'google_ads',
      ],
      all: [
        'shopify',
        'stripe',
        'hubspot',
        'amplitude',
        'mixpanel',
        'braze',
        'customer_io',
        'segment',
        'onesignal',
        'meta_conversions',
        'google_ads',
      ],
    });
  });

  it('names the import streams of each importing app type', () => {
    expect(importingAppTypes.map((t) => [t, importTasksOf(t)])).toEqual([
      ['shopify', ['orders', 'customers', 'products']],
      ['stripe', ['customers', 'charges', 'invoices', 'subscriptions']],
      ['hubspot', ['contacts', 'companies', 'deals']],
    ]);
    expect(importTasksOf('braze')).toEqual([]);
    expect(importTasksOf('nope')).toEqual([]);
    expect(destinationCategoryOf('nope')).toBeUndefined();
  });

  it('rolesOf: tracking and imports make a source, forwards a destination', () => {
    const base = definition('web_tracking');
    const forwards = definition('braze').forwards;
    const imports = definition('stripe').imports;
    expect(rolesOf({ ...base, tracking: undefined })).toEqual([]);
    expect(rolesOf({ ...base, tracking: undefined, imports })).toEqual(['source']);
    expect(rolesOf({ ...base, tracking: undefined, forwards })).toEqual(['destination']);
    expect(rolesOf({ ...base, forwards })).toEqual(['source', 'destination']);
  });
});

describe('every app type', () => {
  it.each(examples)('%s accepts its example', (appType, credentials, config) => {
    expect([credentialsOk(appType, credentials), configOk(appType, config)]).toEqual([true, true]);
  });

  it.each(examples)('%s refuses a field its schemas do not name', (appType, credentials, config) => {
    expect([
      credentialsOk(appType, { ...credentials, typo: 'x' }),
      configOk(appType, { ...config, typo: 'x' }),
    ]).toEqual([false, false]);
  });

  /** Every field a tenant may set, with its path: each is documented for GET /app-types. */
  function fieldsOf(schema: TSchema, path: string): [string, TSchema][] {
    const properties = (schema as { properties?: Record<string, TSchema> }).properties ?? {};
    const variants = (schema as { anyOf?: TSchema[] }).anyOf ?? [];
    return [
      ...Object.entries(properties).flatMap(([name, inner]) => [
        [`${path}.${name}`, inner] as [string, TSchema],
        ...fieldsOf(inner, `${path}.${name}`),
      ]),
      ...variants.flatMap((variant, i) => fieldsOf(variant, `${path}[${i}]`)),
    ];
  }

  it('describes every field, and marks exactly the secrets write-only', () => {
    const all = appCatalog.flatMap((d) => [
      ...fieldsOf(d.credentials, `${d.appType}.credentials`),
      ...fieldsOf(d.config, `${d.appType}.config`),
    ]);
    expect(
      all.filter(([, schema]) => !(typeof schema.description === 'string' && schema.description.length > 5)),
    ).toEqual([]);
    expect(all.filter(([, schema]) => schema.writeOnly === true).map(([path]) => path)).toEqual([
      'shopify.credentials.accessToken',
      'stripe.credentials.secretKey',
      'hubspot.credentials.accessToken',
      'amplitude.credentials.apiKey',
      'amplitude.credentials.secretKey',
      'mixpanel.credentials[0].projectToken',
      'mixpanel.credentials[0].gdprToken',
      'mixpanel.credentials[1].secret',
      'mixpanel.credentials[1].gdprToken',
      'braze.credentials.apiKey',
      'customer_io.credentials.apiKey',
      'segment.credentials.writeKey',
      'onesignal.credentials.apiKey',
      'meta_conversions.credentials.accessToken',
      'google_ads.credentials.developerToken',
      'google_ads.credentials.clientSecret',
      'google_ads.credentials.refreshToken',
      'webhook.credentials.signingSecret',
      'postgres_warehouse.credentials.password',
      'clickhouse_warehouse.credentials.password',
    ]);
  });

  it('names each app type and says what it does, and what a choice of credentials means', () => {
    for (const d of appCatalog) {
      expect([d.appType, d.name.length > 3, d.description.length > 40]).toEqual([d.appType, true, true]);
    }
    const unions = appCatalog.filter((d) => d.credentials.anyOf !== undefined);
    expect(unions.map((d) => [d.appType, (d.credentials.description ?? '').length > 20])).toEqual([
      ['mixpanel', true],
    ]);
  });

  it('has examples that deliver: a recipient where the tenant chooses it, conversions to upload', () => {
    const withRecipient = appCatalog.filter((d) => d.recipient);
    expect(
      withRecipient.map((d) => [
        d.appType,
        credentialsOriginOf(d.appType, (d.example as { config: Record<string, unknown> }).config) !== null,
      ]),
    ).toEqual([
      ['shopify', true],
      ['braze', true],
      ['segment', true],
      ['webhook', true],
      ['postgres_warehouse', true],
      ['clickhouse_warehouse', true],
    ]);
    // Without a conversion action a Google Ads app uploads nothing.
    const ads = definition('google_ads').example as { config: { conversionActions: Record<string, string> } };
    expect(Object.keys(ads.config.conversionActions).length).toBeGreaterThan(0);
  });

  it.each(examples.filter(([, credentials]) => Object.keys(credentials).length > 0))(
    '%s refuses empty credentials and an empty secret',
    (appType, credentials) => {
      expect(credentialsOk(appType, {})).toBe(false);
      const [first] = Object.keys(credentials);
      expect(credentialsOk(appType, { ...credentials, [first ?? '']: '' })).toBe(false);
    },
  );
});

describe('the hosts a tenant chooses', () => {
  it.each([
    ['https://rest.iad-01.braze.com', true],
    ['https://rest.fra-02.braze.eu/', true],
    ['http://rest.iad-01.braze.com', false],
    ['https://rest.iad-01.braze.com.attacker.example', false],
    ['https://rest.iad-01.braze.org', false],
    ['https://attacker.example/rest.iad-01.braze.com', false],
    ['https://rest.iad-01.braze.com/users/track', false],
    ['https://rest..braze.com', false],
    ['https://api.iad-01.braze.com', false],
    ['xhttps://rest.iad-01.braze.com', false],
    ['https://rest.iad-01.brazeXcom', false],
  ])('a Braze REST endpoint %s: %s', (restEndpoint, ok) => {
    expect(configOk('braze', { restEndpoint })).toBe(ok);
  });

  it('a Braze app needs its REST endpoint and may name an app id', () => {
    expect(configOk('braze', {})).toBe(false);
    expect(configOk('braze', { restEndpoint: 'https://rest.iad-01.braze.com', appId: 'app-1' })).toBe(true);
    expect(configOk('braze', { restEndpoint: 'https://rest.iad-01.braze.com', appId: '' })).toBe(false);
  });

  it.each([
    ['https://hosted.rudderlabs.com', true],
    ['https://dp.example.com/v1/batch', true],
    ['https://dp.example.com:8443', true],
    ['http://dp.example.com', false],
    ['https://user@dp.example.com', false],
    ['https://dp.example.com?x=1', false],
    ['https://dp.example.com#x', false],
    ['https://dp.example.com/a b', false],
    ['https://', false],
    ['xhttps://dp.example.com', false],
    ['https://dp.example.com/\n', false],
  ])('a Segment endpoint %j: %s', (endpoint, ok) => {
    expect(configOk('segment', { endpoint })).toBe(ok);
  });

  it.each([
    ['https://hooks.example.com/pipeline', true],
    ['http://hooks.example.com', true],
    ['https://hooks.example.com:8443/a?b=c#d', true],
    ['ftp://hooks.example.com', false],
    ['https://user:pw@hooks.example.com', false],
    ['https://hooks.example.com/a b', false],
    ['hooks.example.com/x', false],
    [' https://hooks.example.com', false],
    [`https://hooks.example.com/${'a'.repeat(2000)}`, true],
    [`https://hooks.example.com/${'a'.repeat(2100)}`, false],
  ])('a webhook URL %j: %s', (url, ok) => {
    expect(configOk('webhook', { url })).toBe(ok);
  });

  it.each([
    ['acme', true],
    ['acme.myshopify.com', true],
    ['Acme-Shop-1', true],
    ['ACME.MYSHOPIFY.COM', false],
    ['acme.example.com', false],
    ['acme.myshopify.com.attacker.example', false],
    ['-acme', false],
    ['acme/admin', false],
    ['acme myshopify', false],
    ['xacme.myshopifyXcom', false],
    ['', false],
    ['a'.repeat(256), false],
  ])('a shop %j: %s', (shop, ok) => {
    expect(configOk('shopify', { shop })).toBe(ok);
  });
});

describe('the other settings a tenant chooses', () => {
  it('a shop’s API version is a quarter’s first month', () => {
    expect(
      ['2025-01', '2025-04', '2025-07', '2025-10', '2025-02', '2025-1', '25-01', '2025-010'].map(
        (apiVersion) => configOk('shopify', { shop: 'acme', apiVersion }),
      ),
    ).toEqual([true, true, true, true, false, false, false, false]);
  });

  it('a Stripe key is a secret or restricted key', () => {
    expect(
      ['sk_test_abc', 'rk_live_A_b9', 'pk_test_abc', 'sk_', 'sk_test abc', 'xsk_test', 'sk_test_abc\n'].map(
        (secretKey) => credentialsOk('stripe', { secretKey }),
      ),
    ).toEqual([true, true, false, false, false, false, false]);
    expect(configOk('stripe', { apiVersion: '2025-09-30.clover' })).toBe(true);
  });

  it('a Google Ads customer id is 10 digits, dashes allowed, and conversion actions are ids', () => {
    const config = (fields: object) => configOk('google_ads', { conversionActions: {}, ...fields });
    expect(
      [
        '1234567890',
        '123-456-7890',
        '123-4567890',
        '12345',
        '123-456-789a',
        '1234567890 ',
        'x1234567890',
      ].map((customerId) => config({ customerId })),
    ).toEqual([true, true, true, false, false, false, false]);
    expect(config({ customerId: '1234567890', loginCustomerId: '123-456-7890' })).toBe(true);
    expect(config({ customerId: '1234567890', loginCustomerId: '42' })).toBe(false);
    expect(
      ['v26', 'v1', 'v123', 'v', 'v1234', '26', 'v26.0'].map((apiVersion) =>
        config({ customerId: '1234567890', apiVersion }),
      ),
    ).toEqual([true, true, true, false, false, false, false]);
    expect(config({ customerId: '1234567890', conversionActions: { 'Order Completed': '1002' } })).toBe(true);
    expect(config({ customerId: '1234567890', conversionActions: { 'Order Completed': 'abc' } })).toBe(false);
    expect(configOk('google_ads', { customerId: '1234567890' })).toBe(false);
  });

  it('a Meta pixel id is digits and its API version v<major>.<minor>', () => {
    const config = (fields: object) => configOk('meta_conversions', { pixelId: '1234567890', ...fields });
    expect(['1', '1234567890', 'abc', '12a', ''].map((pixelId) => config({ pixelId }))).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(['v24.0', 'v1.10', 'v24', '24.0', 'v24.100'].map((apiVersion) => config({ apiVersion }))).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    expect([config({ testEventCode: 'TEST12345' }), config({ testEventCode: 'x'.repeat(65) })]).toEqual([
      true,
      false,
    ]);
  });

  it('a OneSignal app id is a UUID', () => {
    const ok = (appId: string) => credentialsOk('onesignal', { appId, apiKey: 'k' });
    expect(
      [
        '5eb5a37e-b458-11e3-ac11-000c2940e62c',
        '5EB5A37E-B458-11E3-AC11-000C2940E62C',
        '5eb5a37e',
        'x5eb5a37e-b458-11e3-ac11-000c2940e62c',
      ].map(ok),
    ).toEqual([true, true, false, false]);
  });

  it('Mixpanel takes a project token or a service account, and a region', () => {
    expect(credentialsOk('mixpanel', { projectToken: 't' })).toBe(true);
    expect(credentialsOk('mixpanel', { serviceAccount: 'sa', secret: 's', projectId: '42' })).toBe(true);
    expect(credentialsOk('mixpanel', { serviceAccount: 'sa', secret: 's', projectId: 'x42' })).toBe(false);
    expect(credentialsOk('mixpanel', { serviceAccount: 'sa' })).toBe(false);
    expect(credentialsOk('mixpanel', { projectToken: 't', secret: 's' })).toBe(false);
    expect(['eu', 'in', 'us', ''].map((region) => configOk('mixpanel', { region }))).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(['42', '4x', ''].map((projectId) => configOk('mixpanel', { projectId }))).toEqual([
      true,
      false,
      false,
    ]);
  });

  it.each(['amplitude', 'customer_io'])('%s takes the eu region only', (appType) => {
    expect(['eu', 'us', 'EU', ''].map((region) => configOk(appType, { region }))).toEqual([
      true,
      false,
      false,
      false,
    ]);
  });

  it('Customer.io needs its site id with the key', () => {
    expect(credentialsOk('customer_io', { siteId: 's', apiKey: 'k' })).toBe(true);
    expect(credentialsOk('customer_io', { apiKey: 'k' })).toBe(false);
  });
});

describe("the customer's own PostgreSQL (postgres_warehouse)", () => {
  const base = { host: 'warehouse.example.com', database: 'analytics', user: 'loader' };

  it('is a warehouse app type, of the postgres engine', () => {
    expect(warehouseAppTypes).toEqual(['postgres_warehouse', 'clickhouse_warehouse']);
    expect(definition('postgres_warehouse').warehouse).toEqual({ engine: 'postgres' });
  });

  it('takes a plain lowercase schema only', () => {
    for (const schema of ['pipeline', '_raw', 'a1_b2', 'x'.repeat(63)])
      expect({ schema, ok: configOk('postgres_warehouse', { ...base, schema }) }).toEqual({
        schema,
        ok: true,
      });
    for (const schema of ['Pipeline', '1abc', 'a-b', 'a b', 'public"; DROP', '', 'x'.repeat(64)])
      expect({ schema, ok: configOk('postgres_warehouse', { ...base, schema }) }).toEqual({
        schema,
        ok: false,
      });
  });

  it('takes database and user names PostgreSQL keeps, without control characters', () => {
    expect(configOk('postgres_warehouse', { ...base, database: 'd'.repeat(63), user: 'u'.repeat(63) })).toBe(
      true,
    );
    expect(configOk('postgres_warehouse', { ...base, database: 'd'.repeat(64) })).toBe(false);
    expect(configOk('postgres_warehouse', { ...base, user: 'u'.repeat(64) })).toBe(false);
    expect(configOk('postgres_warehouse', { ...base, database: 'ana\u0001lytics' })).toBe(false);
    expect(configOk('postgres_warehouse', { ...base, user: 'loader\n' })).toBe(false);
    expect(configOk('postgres_warehouse', { ...base, user: 'ünïcode role' })).toBe(true);
  });

  it('takes the three TLS modes and no other', () => {
    for (const tlsMode of ['disable', 'require', 'verify-full'])
      expect(configOk('postgres_warehouse', { ...base, tlsMode })).toBe(true);
    for (const tlsMode of ['prefer', 'verify-ca', '', 'VERIFY-FULL'])
      expect(configOk('postgres_warehouse', { ...base, tlsMode })).toBe(false);
  });

  it('takes a password of at most 1,024 characters', () => {
    expect(credentialsOk('postgres_warehouse', { password: 'p'.repeat(1024) })).toBe(true);
    expect(credentialsOk('postgres_warehouse', { password: 'p'.repeat(1025) })).toBe(false);
  });

  it('sends the password to its host and port only', () => {
    expect(credentialsOriginOf('postgres_warehouse', { host: 'WH.Example.com' })).toBe(
      'postgres://wh.example.com:5432',
    );
    expect(credentialsOriginOf('postgres_warehouse', { host: 'wh.example.com', port: 6543 })).toBe(
      'postgres://wh.example.com:6543',
    );
    expect(credentialsOriginOf('postgres_warehouse', {})).toBeNull();
  });
});

describe("the customer's own ClickHouse (clickhouse_warehouse)", () => {
  const base = { host: 'clickhouse.example.com', database: 'pipeline', user: 'loader' };
  const ok = (config: Record<string, unknown>) => configOk('clickhouse_warehouse', { ...base, ...config });

  it('is a warehouse app type of the clickhouse engine, with its example valid', () => {
    expect(definition('clickhouse_warehouse').warehouse).toEqual({ engine: 'clickhouse' });
    expect(rolesOfAppType('clickhouse_warehouse')).toEqual(['warehouse']);
    const { credentials, config } = definition('clickhouse_warehouse').example;
    expect([
      credentialsOk('clickhouse_warehouse', credentials),
      configOk('clickhouse_warehouse', config),
    ]).toEqual([true, true]);
  });

  it('needs a host, a database and a user; takes no field it does not name', () => {
    expect(configOk('clickhouse_warehouse', base)).toBe(true);
    for (const field of ['host', 'database', 'user'] as const) {
      const { [field]: _left, ...rest } = base;
      expect({ field, ok: configOk('clickhouse_warehouse', rest) }).toEqual({ field, ok: false });
    }
    expect(ok({ schema: 'pipeline' })).toBe(false);
    expect(ok({ url: 'https://clickhouse.example.com:8443' })).toBe(false);
  });

  it('takes a DNS name or an IP address as host, nothing a client could read as more', () => {
    for (const host of ['clickhouse.example.com', 'CH-1.example.com.', '93.184.215.14', '2001:db8::1'])
      expect({ host, ok: ok({ host }) }).toEqual({ host, ok: true });
    for (const host of [
      'https://clickhouse.example.com',
      'clickhouse.example.com:8443',
      'clickhouse.example.com/db',
      'a.example.com,b.example.com',
      'user@clickhouse.example.com',
      '-h',
      'clickhouse example.com',
      '',
      `${'a'.repeat(60)}.`.repeat(5) + 'com',
    ])
      expect({ host, ok: ok({ host }) }).toEqual({ host, ok: false });
  });

  it('takes a port from 1 to 65535, a whole number', () => {
    expect([1, 8123, 8443, 65535].map((port) => ok({ port }))).toEqual([true, true, true, true]);
    expect([0, 65536, 8443.5, '8443'].map((port) => ok({ port }))).toEqual([false, false, false, false]);
  });

  it('takes a plain lowercase identifier as database, 63 at most, never the server’s own', () => {
    for (const database of ['pipeline', '_raw', 'a1_b2', 'default', 'systems', 'information', 'x'.repeat(63)])
      expect({ database, ok: ok({ database }) }).toEqual({ database, ok: true });
    for (const database of [
      'system',
      'information_schema',
      'INFORMATION_SCHEMA',
      'Analytics',
      '1abc',
      'a-b',
      'a b',
      'a.b',
      'db`; DROP',
      'ünïcode',
      '',
      'x'.repeat(64),
    ])
      expect({ database, ok: ok({ database }) }).toEqual({ database, ok: false });
  });

  it('takes a user of 1 to 63 characters without control characters', () => {
    expect([ok({ user: 'u'.repeat(63) }), ok({ user: 'ünïcode user' }), ok({ user: 'default' })]).toEqual([
      true,
      true,
      true,
    ]);
    expect([
      ok({ user: 'u'.repeat(64) }),
      ok({ user: '' }),
      ok({ user: 'loader\n' }),
      ok({ user: 'a\u007f' }),
    ]).toEqual([false, false, false, false]);
  });

  it('takes the three TLS modes and no other, verify-full by default', () => {
    for (const tlsMode of ['disable', 'require', 'verify-full']) expect(ok({ tlsMode })).toBe(true);
    for (const tlsMode of ['prefer', 'verify-ca', '', 'VERIFY-FULL', 'https'])
      expect(ok({ tlsMode })).toBe(false);
    const schema = definition('clickhouse_warehouse').config as {
      properties: Record<string, { default?: unknown }>;
    };
    expect([schema.properties.port?.default, schema.properties.tlsMode?.default]).toEqual([
      8443,
      'verify-full',
    ]);
  });

  it('takes a write-only password of 1 to 1,024 characters in credentials, nothing else there', () => {
    expect(credentialsOk('clickhouse_warehouse', { password: 'p'.repeat(1024) })).toBe(true);
    expect(credentialsOk('clickhouse_warehouse', { password: 'p'.repeat(1025) })).toBe(false);
    expect(credentialsOk('clickhouse_warehouse', { password: '' })).toBe(false);
    expect(credentialsOk('clickhouse_warehouse', { password: 'p', user: 'u' })).toBe(false);
    const credentials = definition('clickhouse_warehouse').credentials as {
      properties: Record<string, { writeOnly?: boolean }>;
    };
    expect(credentials.properties.password?.writeOnly).toBe(true);
  });

  it('sends the password to its host and port only', () => {
    expect(credentialsOriginOf('clickhouse_warehouse', { host: 'CH.Example.com' })).toBe(
      'clickhouse://ch.example.com:8443',
    );
    expect(credentialsOriginOf('clickhouse_warehouse', { host: 'ch.example.com', port: 8123 })).toBe(
      'clickhouse://ch.example.com:8123',
    );
    expect(credentialsOriginOf('clickhouse_warehouse', {})).toBeNull();
  });
});

describe('where the credentials go', () => {
  it('to the Braze instance, the Segment-compatible endpoint, the shop', () => {
    expect(credentialsOriginOf('braze', { restEndpoint: 'https://rest.iad-01.braze.com/' })).toBe(
      'https://rest.iad-01.braze.com',
    );
    expect(credentialsOriginOf('segment', {})).toBe('https://api.segment.io');
    expect(credentialsOriginOf('segment', { endpoint: 'https://dp.example.com:8443/v1' })).toBe(
      'https://dp.example.com:8443',
    );
    expect(credentialsOriginOf('shopify', { shop: 'acme' })).toBe('https://acme.myshopify.com');
    expect(credentialsOriginOf('shopify', { shop: 'Acme.MyShopify.com' })).toBe('https://acme.myshopify.com');
    expect(credentialsOriginOf('shopify', { shop: 'acme.myshopify.com.evil' })).toBe(
      'https://acme.myshopify.com.evil.myshopify.com',
    );
    expect(credentialsOriginOf('shopify', {})).toBeNull();
    expect(credentialsOriginOf('shopify', { shop: '' })).toBeNull();
  });

  it('to the webhook URL, which an integration may override with a string', () => {
    const config = { url: 'https://hooks.example.com/a' };
    expect(credentialsOriginOf('webhook', config)).toBe('https://hooks.example.com');
    expect(credentialsOriginOf('webhook', config, { url: 'https://other.example.com:444/b' })).toBe(
      'https://other.example.com:444',
    );
    expect(credentialsOriginOf('webhook', config, { url: 42 })).toBe('https://hooks.example.com');
    expect(credentialsOriginOf('webhook', config, {})).toBe('https://hooks.example.com');
    expect(credentialsOriginOf('webhook', {})).toBeNull();
    // What is no URL is compared as written.
    expect(credentialsOriginOf('webhook', { url: 'not a url' })).toBe('not a url');
  });

  it('nowhere the tenant chooses for vendors with a fixed host, or unknown app types', () => {
    expect(
      [
        'amplitude',
        'mixpanel',
        'customer_io',
        'onesignal',
        'meta_conversions',
        'google_ads',
        'hubspot',
        'stripe',
        'nope',
      ].map((t) =>
        credentialsOriginOf(t, { url: 'https://x.example.com', endpoint: 'https://y.example.com' }),
      ),
    ).toEqual([null, null, null, null, null, null, null, null, null]);
  });
});

describe('the clients the catalog builds', () => {
  it('a forwarder for each forwarding app type, none for the others', () => {
    expect(forwardingAppTypes.map((t) => forwarderFor(t)?.appType)).toEqual(forwardingAppTypes);
    expect(['stripe', 'shopify', 'web_tracking', 'nope'].map((t) => forwarderFor(t))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  /** The first request a connector's credential check makes, answered 200 {}. */
  async function checkRequest(appType: string, credentials: object, config: object) {
    const requests: { url: string; headers: Record<string, string> }[] = [];
    const fetch: typeof globalThis.fetch = async (input, init) => {
      requests.push({ url: String(input), headers: (init?.headers ?? {}) as Record<string, string> });
      return new Response('{"results":[],"data":[],"has_more":false,"object":"list"}', {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    };
    const connector = connectorFor(
      {
        appType,
        credentials: credentials as Record<string, unknown>,
        config: config as Record<string, unknown>,
      },
      { fetch },
    );
    if (!connector) throw new Error(`no connector for ${appType}`);
    expect(connector.appType).toBe(appType);
    await connector.check();
    return requests[0];
  }

  it('a Shopify connector for the shop, its token and API version; the shop of old apps in credentials', async () => {
    const request = await checkRequest(
      'shopify',
      { accessToken: 'shpat_1' },
      { shop: 'acme', apiVersion: '2025-04' },
    );
    expect([request?.url, request?.headers['x-shopify-access-token']]).toEqual([
      'https://acme.myshopify.com/admin/api/2025-04/shop.json',
      'shpat_1',
    ]);
    const old = await checkRequest('shopify', { accessToken: 'shpat_2', shop: 'legacy' }, {});
    expect(old?.url).toMatch(/^https:\/\/legacy\.myshopify\.com\/admin\/api\/\d{4}-\d{2}\/shop\.json$/);
    const preferred = await checkRequest(
      'shopify',
      { accessToken: 'shpat_2', shop: 'legacy' },
      { shop: 'acme' },
    );
    expect(preferred?.url).toMatch(/^https:\/\/acme\.myshopify\.com\//);
  });

  it('a Stripe connector with its key (or the older apiKey) and API version', async () => {
    const request = await checkRequest(
      'stripe',
      { secretKey: 'sk_test_1' },
      { apiVersion: '2025-09-30.clover' },
    );
    expect(request?.url.startsWith('https://api.stripe.com/')).toBe(true);
    expect([request?.headers.authorization, request?.headers['stripe-version']]).toEqual([
      'Bearer sk_test_1',
      '2025-09-30.clover',
    ]);
    const old = await checkRequest('stripe', { apiKey: 'sk_test_old' }, {});
    expect([old?.headers.authorization, old?.headers['stripe-version']]).toEqual([
      'Bearer sk_test_old',
      undefined,
    ]);
  });

  it('a HubSpot connector with its token, and none for app types without imports', async () => {
    const request = await checkRequest('hubspot', { accessToken: 'pat-na1-1' }, {});
    expect([request?.url.startsWith('https://api.hubapi.com/'), request?.headers.authorization]).toEqual([
      true,
      'Bearer pat-na1-1',
    ]);
    expect(connectorFor({ appType: 'braze', credentials: {}, config: {} })).toBeUndefined();
    expect(connectorFor({ appType: 'nope', credentials: {}, config: {} })).toBeUndefined();
  });
});

describe('schema builders', () => {
  /** The JSON Schema a client reads, without TypeBox's symbol keys. */
  const plain = (schema: TSchema): unknown => JSON.parse(JSON.stringify(schema));

  it('secret: a bounded, write-only string', () => {
    expect(plain(secret('The key.'))).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      writeOnly: true,
      description: 'The key.',
    });
    expect(plain(secret('k', { pattern: '^sk_', maxLength: 99 }))).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: 99,
      writeOnly: true,
      description: 'k',
      pattern: '^sk_',
    });
  });

  it('text: a bounded string with its options', () => {
    expect(plain(text('A name.'))).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      description: 'A name.',
    });
    expect(plain(text('d', { pattern: '^a$', maxLength: 5, format: 'uri' }))).toEqual({
      type: 'string',
      minLength: 1,
      maxLength: 5,
      description: 'd',
      pattern: '^a$',
      format: 'uri',
    });
  });

  it('fields: an object that refuses fields it does not name', () => {
    expect(fields({ a: text('a') })).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['a'],
    });
    expect(fields({}, 'Described.').description).toBe('Described.');
    expect(Object.keys(fields({}))).not.toContain('description');
    const validate = ajv.compile(fields({ a: text('a field') }));
    expect([validate({ a: 'x' }), validate({ a: 'x', b: 'y' }), validate({})]).toEqual([true, false, false]);
  });
});

describe('a customer-owned PostgreSQL warehouse', () => {
  const valid = (host: unknown) => configOk('postgres_warehouse', { host, database: 'd', user: 'u' });

  it('takes as a host only what a driver reads as one host: never a path, list, option or parameter', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (host) => {
        if (!valid(host)) return;
        expect(host).not.toMatch(/[\s/,=@?#'"\\]/u);
        expect([...host].filter((c) => c < ' ' || c === '\u007f')).toEqual([]);
        expect(host).not.toMatch(/^-/);
        expect(host.length).toBeLessThanOrEqual(253);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }),
        fc.constantFrom('/', ',', '=', ' ', '\t', '\n', '\u0000', '@', '?', '#', "'", '\\'),
        fc.string({ maxLength: 40 }),
        (before, hostile, after) => !valid(`${before}${hostile}${after}`),
      ),
    );
    expect(fc.sample(fc.domain(), 200).filter((host) => !valid(host))).toEqual([]);
  });

  it('sends the password to one host and port: moving the app needs it entered again', () => {
    const origin = (config: Record<string, unknown>) => credentialsOriginOf('postgres_warehouse', config);
    expect(origin({ host: 'DB.example.com', database: 'd', user: 'u' })).toBe(
      'postgres://db.example.com:5432',
    );
    expect(origin({ host: 'db.example.com', port: 5432, database: 'd', user: 'u' })).toBe(
      'postgres://db.example.com:5432',
    );
    expect(origin({ host: 'db.example.com', port: 6543, database: 'd', user: 'u' })).toBe(
      'postgres://db.example.com:6543',
    );
    expect(origin({ host: 'other.example.com', database: 'd', user: 'u' })).not.toBe(
      origin({ host: 'db.example.com', database: 'd', user: 'u' }),
    );
    // http(s) recipients keep their URL origin.
    expect(credentialsOriginOf('webhook', { url: 'https://hooks.example.com/a?b' })).toBe(
      'https://hooks.example.com',
    );
  });
});

describe('deletion clients', () => {
  it('names the deletion client of each vendor with a deletion API; the others are not_supported', () => {
    const clients = Object.fromEntries(
      forwardingAppTypes.map((appType) => [appType, deletionClientFor(appType)?.appType ?? 'not_supported']),
    );
    expect(clients).toEqual({
      amplitude: 'amplitude',
      mixpanel: 'mixpanel',
      braze: 'braze',
      customer_io: 'customer_io',
      segment: 'not_supported',
      onesignal: 'onesignal',
      webhook: 'webhook',
      hubspot: 'hubspot',
      meta_conversions: 'not_supported',
      google_ads: 'not_supported',
    });
    expect(deletionClientFor('stripe')).toBeUndefined();
    expect(deletionClientFor('nope')).toBeUndefined();
    expect(deletionClientFor('mixpanel')?.minIntervalMs).toBe(1000);
  });

  it('builds each with the base URL given for its app type', () => {
    for (const appType of forwardingAppTypes) {
      const client = deletionClientFor(appType, { baseUrls: { [appType]: 'http://127.0.0.1:9' } });
      expect(client?.appType).toBe(deletionClientFor(appType)?.appType);
    }
  });
});
