import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { consentGroupFor, destinationCategories, segmentDestinationNames } from '@pipeline/events';
import { lookAlikeCredentials } from '@pipeline/destinations/testing';
import Ajv from 'ajv';
import { fields, secret, text } from './app-type';
import {
  appCatalog,
  appTypeDefinition,
  appTypes,
  baseUrlAppTypes,
  consentGroupOfAppType,
  deliveryKinds,
  destinationCategoryOf,
  forwarderFor,
  forwardingAppTypes,
  importingAppTypes,
  importTasksOf,
  isDeliveryKind,
  rolesOfAppType,
} from './catalog';

const repo = path.resolve(__dirname, '../../..');
const ajv = new Ajv({ allErrors: true, strict: true });

describe('the app catalog', () => {
  it('has one definition per app type, each with a name and a description', () => {
    expect(new Set(appTypes).size).toBe(appCatalog.length);
    for (const definition of appCatalog) {
      expect(definition.appType).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(definition.name.length).toBeGreaterThan(1);
      expect(definition.description.length).toBeGreaterThan(20);
      expect(appTypeDefinition(definition.appType)).toBe(definition);
    }
    expect(appTypeDefinition('toString')).toBeUndefined();
    expect(appTypeDefinition('hubspot ')).toBeUndefined();
  });

  it('every app type works as something: a tracking source, an import, a destination or a warehouse', () => {
    for (const definition of appCatalog) {
      expect(rolesOfAppType(definition.appType).length).toBeGreaterThan(0);
      // An import with no streams would offer a source that syncs nothing.
      if (definition.imports) expect(definition.imports.streams.length).toBeGreaterThan(0);
    }
    expect(rolesOfAppType('web_tracking')).toEqual(['source']);
    expect(rolesOfAppType('stripe')).toEqual(['source']);
    expect(rolesOfAppType('braze')).toEqual(['destination']);
    expect(rolesOfAppType('nope')).toEqual([]);
    expect(importTasksOf('stripe')).toEqual(['customers', 'charges', 'invoices', 'subscriptions']);
    expect(importTasksOf('shopify')).toEqual(['orders', 'customers', 'products']);
    expect(importTasksOf('web_tracking')).toEqual([]);
  });

  it('answers lookups of unknown app types with nothing, never a throw', () => {
    expect(importTasksOf('nope')).toEqual([]);
    expect(destinationCategoryOf('nope')).toBeUndefined();
    expect(destinationCategoryOf('stripe')).toBeUndefined();
    expect(destinationCategoryOf('braze')).toBe('messaging');
    expect(destinationCategoryOf('google_ads')).toBe('advertising');
    expect(consentGroupOfAppType('nope')).toBeNull();
    expect(isDeliveryKind('warehouse')).toBe(true);
    expect(isDeliveryKind('meta_conversions')).toBe(true);
    expect(isDeliveryKind('stripe')).toBe(false);
    expect(forwarderFor('nope')).toBeUndefined();
    expect(forwarderFor('amplitude', {})?.appType).toBe('amplitude');
  });

  it('builds schema fields with bounded lengths, their description and pattern', () => {
    expect(secret('The key.')).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      writeOnly: true,
      description: 'The key.',
    });
    expect(secret('k', { pattern: '^sk_', maxLength: 99 })).toMatchObject({ pattern: '^sk_', maxLength: 99 });
    expect(secret('k')).not.toHaveProperty('pattern');
    expect(text('A name.')).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      description: 'A name.',
    });
    expect(text('x', { maxLength: 7, pattern: '^a' })).toMatchObject({ maxLength: 7, pattern: '^a' });
    expect(text('x')).not.toHaveProperty('writeOnly');
    expect(fields({}, 'Settings.')).toMatchObject({
      type: 'object',
      additionalProperties: false,
      description: 'Settings.',
    });
    expect(fields({})).not.toHaveProperty('description');
  });

  it('gives every destination a category whose consent group is decided', () => {
    for (const appType of forwardingAppTypes) {
      const category = appTypeDefinition(appType)!.forwards!.category;
      expect(destinationCategories).toContain(category);
      expect(consentGroupOfAppType(appType)).toBe(consentGroupFor[category]);
    }
    expect(consentGroupOfAppType('amplitude')).toBe('analytics');
    expect(consentGroupOfAppType('braze')).toBe('marketing');
    expect(consentGroupOfAppType('onesignal')).toBe('marketing');
    expect(consentGroupOfAppType('webhook')).toBeNull();
    expect(consentGroupOfAppType('stripe')).toBeNull();
  });

  describe.each(appCatalog.map((d) => [d.appType, d] as const))('%s schemas', (_, definition) => {
    const credentials = ajv.compile(definition.credentials);
    const config = ajv.compile(definition.config);

    it('accept the example', () => {
      expect(credentials(definition.example.credentials)).toBe(true);
      expect(config(definition.example.config)).toBe(true);
    });

    it('refuse a field they do not name', () => {
      expect(credentials({ ...(definition.example.credentials as object), apiKeyy: 'x' })).toBe(false);
      expect(config({ ...(definition.example.config as object), regoin: 'eu' })).toBe(false);
    });

    it('mark every secret credential write-only', () => {
      const branches = ((definition.credentials as { anyOf?: unknown[] }).anyOf ?? [
        definition.credentials,
      ]) as {
        properties?: Record<string, { writeOnly?: boolean }>;
      }[];
      for (const branch of branches)
        for (const [name, field] of Object.entries(branch.properties ?? {}))
          if (/key|secret|token|password/i.test(name))
            expect({ name, writeOnly: field.writeOnly }).toEqual({ name, writeOnly: true });
    });
  });
});

/** One form of an app type's credentials: a valid value, and its fields. */
interface CredentialForm {
  example: Record<string, unknown>;
  fields: string[];
  required: string[];
  /** Write-only: never returned, never echoed in an error. */
  secrets: string[];
}

/** What each app type is, written out: a definition that drifts from it fails below. */
interface Expected {
  roles: string[];
  importTasks: string[];
  category: string | undefined;
  consentGroup: string | null;
  /** Whether VENDOR_BASE_URL_<APP TYPE> may replace its vendor host. */
  baseUrl: boolean;
  credentials: CredentialForm[];
  badCredentials: Record<string, unknown>[];
  config: {
    fields: string[];
    required: string[];
    good: Record<string, unknown>[];
    bad: Record<string, unknown>[];
  };
}

const source = { roles: ['source'], importTasks: [], category: undefined, consentGroup: null };
const one = (example: Record<string, unknown>, secrets: string[]): CredentialForm[] => [
  { example, fields: Object.keys(example), required: Object.keys(example), secrets },
];

const expected: Record<string, Expected> = {
  web_tracking: {
    ...source,
    baseUrl: false,
    credentials: [{ example: {}, fields: [], required: [], secrets: [] }],
    badCredentials: [{ writeKey: 'wk' }],
    config: { fields: [], required: [], good: [{}], bad: [{ url: 'https://shop.example' }] },
  },
  shopify: {
    ...source,
    importTasks: ['orders', 'customers', 'products'],
    baseUrl: true,
    credentials: one({ accessToken: 'shpat_0123456789abcdef' }, ['accessToken']),
    badCredentials: [{ accessToken: '' }],
    config: {
      fields: ['shop', 'apiVersion'],
      required: ['shop'],
      good: [{ shop: 'acme' }, { shop: 'acme-2.myshopify.com', apiVersion: '2026-10' }],
      bad: [{ shop: 'acme.example.com' }, { shop: '-acme' }, { shop: 'acme', apiVersion: '2026-02' }],
    },
  },
  stripe: {
    ...source,
    importTasks: ['customers', 'charges', 'invoices', 'subscriptions'],
    baseUrl: true,
    credentials: one({ secretKey: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' }, ['secretKey']),
    badCredentials: [{ secretKey: 'pk_live_0123' }, { secretKey: '' }],
    config: {
      fields: ['apiVersion'],
      required: [],
      good: [{}, { apiVersion: '2025-09-30.clover' }],
      bad: [{ apiVersion: '' }, { apiVersion: 20250930 }],
    },
  },
  hubspot: {
    roles: ['source', 'destination'],
    importTasks: ['contacts', 'companies', 'deals'],
    category: 'customer_data',
    consentGroup: 'analytics',
    baseUrl: true,
    credentials: one({ accessToken: 'pat-na1-00000000-0000-0000-0000-000000000000' }, ['accessToken']),
    badCredentials: [{ accessToken: '' }],
    config: { fields: [], required: [], good: [{}], bad: [{ portalId: '123' }] },
  },
  amplitude: {
    roles: ['destination'],
    importTasks: [],
    category: 'product_analytics',
    consentGroup: 'analytics',
    baseUrl: true,
    credentials: [
      {
        example: { apiKey: 'amp-0123456789abcdef', secretKey: 'amp-secret-0123' },
        fields: ['apiKey', 'secretKey'],
        required: ['apiKey'],
        secrets: ['apiKey', 'secretKey'],
      },
    ],
    badCredentials: [{ apiKey: '' }, { apiKey: 'amp-0123', secretKey: '' }],
    config: { fields: ['region'], required: [], good: [{}, { region: 'eu' }], bad: [{ region: 'us' }] },
  },
  mixpanel: {
    roles: ['destination'],
    importTasks: [],
    category: 'product_analytics',
    consentGroup: 'analytics',
    baseUrl: true,
    credentials: [
      {
        example: { projectToken: 'mp-0123', gdprToken: 'mp-gdpr-0123' },
        fields: ['projectToken', 'gdprToken'],
        required: ['projectToken'],
        secrets: ['projectToken', 'gdprToken'],
      },
      {
        example: { serviceAccount: 'pipeline.sa', secret: 'sa-secret', projectId: '12345', gdprToken: 'g' },
        fields: ['serviceAccount', 'secret', 'projectId', 'gdprToken'],
        required: ['serviceAccount', 'secret'],
        secrets: ['secret', 'gdprToken'],
      },
    ],
    // One form or the other, not a mix; a project id is digits.
    badCredentials: [
      { projectToken: 'mp-0123', secret: 'sa-secret' },
      { serviceAccount: 'pipeline.sa', secret: 'sa-secret', projectId: 'p-1' },
      { projectToken: '' },
      { projectToken: 'mp-0123', gdprToken: '' },
    ],
    config: {
      fields: ['region', 'projectId'],
      required: [],
      good: [{}, { region: 'eu' }, { region: 'in', projectId: '12345' }],
      bad: [{ region: 'us' }, { projectId: 'p-1' }],
    },
  },
  braze: {
    roles: ['destination'],
    importTasks: [],
    category: 'messaging',
    consentGroup: 'marketing',
    baseUrl: true,
    credentials: one({ apiKey: 'braze-0123456789abcdef' }, ['apiKey']),
    badCredentials: [{ apiKey: '' }],
    config: {
      fields: ['restEndpoint', 'appId'],
      required: ['restEndpoint'],
      good: [{ restEndpoint: 'https://rest.fra-01.braze.eu/', appId: 'app-1' }],
      bad: [
        { restEndpoint: 'http://rest.iad-01.braze.com' },
        { restEndpoint: 'https://rest.iad-01.evil.com' },
      ],
    },
  },
  customer_io: {
    roles: ['destination'],
    importTasks: [],
    category: 'messaging',
    consentGroup: 'marketing',
    baseUrl: true,
    credentials: one({ siteId: 'cio-site-0123', apiKey: 'cio-0123456789abcdef' }, ['apiKey']),
    badCredentials: [{ siteId: '', apiKey: 'cio-0123' }],
    config: { fields: ['region'], required: [], good: [{}, { region: 'eu' }], bad: [{ region: 'us' }] },
  },
  segment: {
    roles: ['destination'],
    importTasks: [],
    category: 'customer_data',
    consentGroup: 'analytics',
    baseUrl: true,
    credentials: one({ writeKey: 'seg-0123456789abcdef' }, ['writeKey']),
    badCredentials: [{ writeKey: '' }],
    config: {
      fields: ['endpoint'],
      required: [],
      good: [{}, { endpoint: 'https://rudder.example.com/v1' }],
      bad: [{ endpoint: 'http://api.segment.io' }, { endpoint: 'https://user@api.segment.io' }],
    },
  },
  onesignal: {
    roles: ['destination'],
    importTasks: [],
    category: 'push',
    consentGroup: 'marketing',
    baseUrl: true,
    credentials: one({ appId: '5eb5a37e-b458-11e3-ac11-000c2940e62c', apiKey: 'os-0123456789abcdef' }, [
      'apiKey',
    ]),
    badCredentials: [{ appId: 'not-a-uuid', apiKey: 'os-0123' }],
    config: {
      fields: [],
      required: [],
      good: [{}],
      bad: [{ appId: '5eb5a37e-b458-11e3-ac11-000c2940e62c' }],
    },
  },
  meta_conversions: {
    roles: ['destination'],
    importTasks: [],
    category: 'advertising',
    consentGroup: 'marketing',
    baseUrl: true,
    credentials: one({ accessToken: 'EAAB0123456789abcdef' }, ['accessToken']),
    badCredentials: [{ accessToken: '' }],
    config: {
      fields: ['pixelId', 'apiVersion', 'testEventCode'],
      required: ['pixelId'],
      good: [{ pixelId: '1234567890', apiVersion: 'v24.0', testEventCode: 'TEST12345' }],
      bad: [
        { pixelId: 'px-1' },
        { pixelId: '1234567890', apiVersion: '24.0' },
        { pixelId: '1234567890', testEventCode: 'T'.repeat(65) },
      ],
    },
  },
  google_ads: {
    roles: ['destination'],
    importTasks: [],
    category: 'advertising',
    consentGroup: 'marketing',
    baseUrl: true,
    credentials: one(
      {
        developerToken: 'dev-0123456789abcdef',
        clientId: '0123456789.apps.googleusercontent.com',
        clientSecret: 'GOCSPX-0123456789abcdef',
        refreshToken: '1//0123456789abcdef',
      },
      ['developerToken', 'clientSecret', 'refreshToken'],
    ),
    badCredentials: [{ developerToken: '', clientId: 'c', clientSecret: 's', refreshToken: 'r' }],
    config: {
      fields: ['customerId', 'loginCustomerId', 'apiVersion', 'conversionActions'],
      required: ['customerId', 'conversionActions'],
      good: [
        { customerId: '1234567890', conversionActions: {} },
        {
          customerId: '123-456-7890',
          loginCustomerId: '9876543210',
          apiVersion: 'v26',
          conversionActions: { Purchase: '1002' },
        },
      ],
      bad: [
        { customerId: '123-456-789', conversionActions: {} },
        { customerId: '1234567890', conversionActions: { Purchase: 'action-1' } },
        { customerId: '1234567890', apiVersion: '26', conversionActions: {} },
      ],
    },
  },
  webhook: {
    roles: ['destination'],
    importTasks: [],
    category: 'webhook',
    consentGroup: null,
    baseUrl: false,
    credentials: one({ signingSecret: 'whsec-0123456789abcdef' }, ['signingSecret']),
    badCredentials: [{ signingSecret: '' }],
    config: {
      fields: ['url'],
      required: [],
      good: [{}, { url: 'http://hooks.example.com/in?x=1' }],
      bad: [{ url: 'ftp://hooks.example.com' }, { url: 'https://user@hooks.example.com/' }],
    },
  },
  postgres_warehouse: {
    roles: ['warehouse'],
    importTasks: [],
    category: undefined,
    consentGroup: null,
    baseUrl: false,
    credentials: one({ password: 'a-long-random-password' }, ['password']),
    badCredentials: [{ password: '' }, { password: 'x'.repeat(1025) }, { password: 'p', user: 'u' }],
    config: {
      fields: ['host', 'port', 'database', 'user', 'schema', 'tlsMode'],
      required: ['host', 'database', 'user'],
      good: [
        { host: 'db.example.com', database: 'analytics', user: 'loader' },
        { host: '203.0.113.7', port: 6543, database: 'a b', user: 'l', schema: '_p1', tlsMode: 'require' },
        { host: '2001:db8::7', database: 'd', user: 'u', tlsMode: 'disable' },
        { host: 'DB-1.Example.com.', database: 'd', user: 'u', schema: 'pipeline', tlsMode: 'verify-full' },
      ],
      // Socket paths, host lists, key=value pairs, options, spaces, control characters,
      // absurd lengths, URLs: none is a host.
      bad: [
        ...[
          '/var/run/postgresql',
          'a.com,b.com',
          'host=evil',
          'db.example.com sslmode=disable',
          '-c',
          '-db.example.com',
          'db.example.com\n',
          'db\u0000.example.com',
          'postgres://db.example.com',
          'user@db.example.com',
          'a'.repeat(64) + '.com',
          'a.'.repeat(127) + 'com',
          '',
        ].map((host) => ({ host, database: 'd', user: 'u' })),
        { host: 'h.com', database: 'd', user: 'u', port: 0 },
        { host: 'h.com', database: 'd', user: 'u', port: 65536 },
        { host: 'h.com', database: 'd', user: 'u', port: '5432' },
        { host: 'h.com', database: 'd', user: 'u', schema: 'Pipeline' },
        { host: 'h.com', database: 'd', user: 'u', schema: 'a-b' },
        { host: 'h.com', database: 'd', user: 'u', schema: 'a'.repeat(64) },
        { host: 'h.com', database: 'd', user: 'u', tlsMode: 'prefer' },
        { host: 'h.com', database: 'x'.repeat(64), user: 'u' },
        { host: 'h.com', database: 'd', user: 'u\u0000' },
        { host: 'h.com', database: 'd', user: 'u', url: 'postgres://h.com/d' },
      ],
    },
  },
  clickhouse_warehouse: {
    roles: ['warehouse'],
    importTasks: [],
    category: undefined,
    consentGroup: null,
    baseUrl: false,
    credentials: one({ password: 'a-long-random-password' }, ['password']),
    badCredentials: [{ password: '' }, { password: 'x'.repeat(1025) }, { password: 'p', user: 'u' }],
    config: {
      fields: ['host', 'port', 'database', 'user', 'tlsMode'],
      required: ['host', 'database', 'user'],
      good: [
        { host: 'ch.example.com', database: 'pipeline', user: 'loader' },
        { host: '203.0.113.7', port: 8123, database: 'analytics_1', user: 'l o', tlsMode: 'disable' },
        { host: '2001:db8::7', database: '_d', user: 'u', tlsMode: 'require' },
        { host: 'CH-1.Example.com.', port: 8443, database: 'd', user: 'u', tlsMode: 'verify-full' },
      ],
      // URLs, paths, host lists, ports in the host, spaces, control characters, absurd lengths:
      // none is a host.
      bad: [
        ...[
          'https://ch.example.com',
          'ch.example.com:8443',
          'ch.example.com/db',
          'a.com,b.com',
          '-ch.example.com',
          'ch.example.com\n',
          'user@ch.example.com',
          'a'.repeat(64) + '.com',
          '',
        ].map((host) => ({ host, database: 'd', user: 'u' })),
        { host: 'h.com', database: 'd', user: 'u', port: 0 },
        { host: 'h.com', database: 'd', user: 'u', port: 65536 },
        { host: 'h.com', database: 'd', user: 'u', port: '8443' },
        { host: 'h.com', database: 'system', user: 'u' },
        { host: 'h.com', database: 'Analytics', user: 'u' },
        { host: 'h.com', database: 'a-b', user: 'u' },
        { host: 'h.com', database: 'x'.repeat(64), user: 'u' },
        { host: 'h.com', database: 'd', user: 'u', tlsMode: 'https' },
        { host: 'h.com', database: 'd', user: 'u\u0000' },
        { host: 'h.com', database: 'd', user: 'u', schema: 'pipeline' },
      ],
    },
  },
};

describe('each app type, written out', () => {
  it('names every app type of the catalog, in its order', () => {
    expect(Object.keys(expected)).toEqual([...appTypes]);
  });

  describe.each(appCatalog.map((d) => [d.appType, d] as const))('%s', (appType, definition) => {
    const want = expected[appType]!;
    const credentials = ajv.compile(definition.credentials);
    const config = ajv.compile(definition.config);
    const forms = ((definition.credentials as { anyOf?: object[] }).anyOf ?? [definition.credentials]) as {
      properties: Record<string, { writeOnly?: boolean }>;
      required?: string[];
    }[];
    const configSchema = definition.config as { properties?: Record<string, unknown>; required?: string[] };

    it('plays its roles, imports its tasks, and has its category, consent group and base URL setting', () => {
      expect({
        roles: rolesOfAppType(appType),
        importTasks: importTasksOf(appType),
        category: destinationCategoryOf(appType),
        consentGroup: consentGroupOfAppType(appType),
        baseUrl: baseUrlAppTypes.all.includes(appType),
      }).toEqual({
        roles: want.roles,
        importTasks: want.importTasks,
        category: want.category,
        consentGroup: want.consentGroup,
        baseUrl: want.baseUrl,
      });
    });

    it('has exactly its credential forms: their fields, required ones and write-only secrets', () => {
      expect(
        forms.map((form) => ({
          fields: Object.keys(form.properties),
          required: form.required ?? [],
          secrets: Object.entries(form.properties)
            .filter(([, field]) => field.writeOnly)
            .map(([name]) => name),
        })),
      ).toEqual(want.credentials.map(({ fields, required, secrets }) => ({ fields, required, secrets })));
    });

    it('accepts each credential form, and refuses it without a required field or of the wrong shape', () => {
      const answers = want.credentials.flatMap((form) => [
        { value: form.example, valid: credentials(form.example) },
        ...form.required.map((field) => {
          const { [field]: _dropped, ...without } = form.example;
          return { value: without, valid: credentials(without) };
        }),
      ]);
      const bad = want.badCredentials.map((value) => ({ value, valid: credentials(value) }));
      expect([...answers, ...bad]).toEqual([
        ...want.credentials.flatMap((form) => [
          { value: form.example, valid: true },
          ...form.required.map((field) => {
            const { [field]: _dropped, ...without } = form.example;
            return { value: without, valid: false };
          }),
        ]),
        ...want.badCredentials.map((value) => ({ value, valid: false })),
      ]);
    });

    it('has exactly its config fields, accepts good config and refuses bad', () => {
      expect({
        fields: Object.keys(configSchema.properties ?? {}),
        required: configSchema.required ?? [],
      }).toEqual({
        fields: want.config.fields,
        required: want.config.required,
      });
      const withoutRequired = want.config.required.map((field) => {
        const { [field]: _dropped, ...without } = definition.example.config as Record<string, unknown>;
        return without;
      });
      const answers = [...want.config.good, ...want.config.bad, ...withoutRequired].map((value) => ({
        value,
        valid: config(value),
      }));
      expect(answers).toEqual([
        ...want.config.good.map((value) => ({ value, valid: true })),
        ...[...want.config.bad, ...withoutRequired].map((value) => ({ value, valid: false })),
      ]);
    });
  });
});

// Every list of app types outside the catalog is derived here and compared with it: a list that
// drifts fails this test.
describe('lists of app types elsewhere match the catalog', () => {
  it('the delivery manifests: one Deployment file per delivery kind, each in the kustomization', () => {
    const files = readdirSync(path.join(repo, 'deploy/base/delivery'))
      .filter((file) => file.endsWith('.yaml') && file !== 'pdb.yaml')
      .map((file) => file.replace(/\.yaml$/, ''));
    expect(files.sort()).toEqual([...deliveryKinds].sort());
    const kustomization = readFileSync(path.join(repo, 'deploy/base/kustomization.yaml'), 'utf8');
    for (const kind of deliveryKinds) expect(kustomization).toContain(`delivery/${kind}.yaml`);
  });

  it('the base URL settings in the deployed config', () => {
    const config = readFileSync(path.join(repo, 'deploy/base/config.yaml'), 'utf8');
    const set = new Set(
      [...config.matchAll(/^\s+VENDOR_BASE_URL_([A-Z0-9_]+):/gm)].map((m) => m[1]!.toLowerCase()),
    );
    expect([...set].sort()).toEqual([...baseUrlAppTypes.all].sort());
    expect(baseUrlAppTypes.forwarding.length).toBeGreaterThan(0);
    expect(baseUrlAppTypes.forwarding.filter((t) => !forwardingAppTypes.includes(t))).toEqual([]);
    expect(baseUrlAppTypes.all).not.toContain('webhook');
  });

  it('the vendor look-alikes used by the tests', () => {
    expect(Object.keys(lookAlikeCredentials).sort()).toEqual([...forwardingAppTypes].sort());
  });

  it('the Segment integration names events may name destinations by', () => {
    expect(Object.keys(segmentDestinationNames).sort()).toEqual([...forwardingAppTypes].sort());
  });

  it('the delivery kinds list derives forwarding and importing types from the definitions', () => {
    expect(deliveryKinds).toEqual([
      'log',
      'warehouse',
      ...appCatalog.filter((d) => d.forwards).map((d) => d.appType),
    ]);
    expect(importingAppTypes).toEqual(appCatalog.filter((d) => d.imports).map((d) => d.appType));
  });
});
