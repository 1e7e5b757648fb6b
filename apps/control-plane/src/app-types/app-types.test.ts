import { appCatalog, appTypes } from '@pipeline/catalog';
import Ajv from 'ajv';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

describe('GET /api/v1/app-types (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  beforeAll(async () => {
    h = await startHarness('app types');
    t = await h.tenant();
  });
  afterAll(() => h.close());

  it('lists every app type of the catalog with its roles, consent group, tasks and schemas', async () => {
    const response = await h.as(t.key).get('/api/v1/app-types');
    expect(response.status).toBe(200);
    const data = response.body.data as Record<string, unknown>[];
    expect(data.map((d) => d.appType)).toEqual([...appTypes]);
    const byType = Object.fromEntries(data.map((d) => [d.appType as string, d]));
    expect(byType.stripe).toMatchObject({
      name: 'Stripe',
      roles: ['source'],
      category: null,
      consentGroup: null,
      importTasks: [
        { name: 'customers', primaryKey: 'id', cursorField: 'created' },
        { name: 'charges', primaryKey: 'id', cursorField: 'created' },
        { name: 'invoices', primaryKey: 'id', cursorField: 'created' },
        { name: 'subscriptions', primaryKey: 'id', cursorField: 'created' },
      ],
      secretFields: ['secretKey'],
      baseUrlVariable: 'VENDOR_BASE_URL_STRIPE',
    });
    expect(byType.braze).toMatchObject({
      roles: ['destination'],
      category: 'messaging',
      consentGroup: 'marketing',
      importTasks: [],
      secretFields: ['apiKey'],
      configSchema: { type: 'object', required: ['restEndpoint'], additionalProperties: false },
    });
    expect(byType.amplitude).toMatchObject({ category: 'product_analytics', consentGroup: 'analytics' });
    expect(byType.webhook).toMatchObject({
      consentGroup: null,
      baseUrlVariable: null,
      secretFields: ['signingSecret'],
    });
    expect(byType.web_tracking).toMatchObject({ roles: ['source'], secretFields: [] });
    expect(byType.mixpanel!.secretFields).toEqual(['projectToken', 'gdprToken', 'secret']);
    expect(
      (byType.braze!.credentialsSchema as { properties: { apiKey: unknown } }).properties.apiKey,
    ).toMatchObject({
      type: 'string',
      writeOnly: true,
    });
  });

  it('answers schemas a client can validate with: each accepts the catalog example', async () => {
    const { body } = await h.as(t.key).get('/api/v1/app-types');
    const ajv = new Ajv({ strict: true });
    for (const view of body.data as { appType: string; credentialsSchema: object; configSchema: object }[]) {
      const example = appCatalog.find((d) => d.appType === view.appType)!.example;
      expect(ajv.validate(view.credentialsSchema, example.credentials)).toBe(true);
      expect(ajv.validate(view.configSchema, example.config)).toBe(true);
      expect(ajv.validate(view.credentialsSchema, { ...(example.credentials as object), extra: 'x' })).toBe(
        false,
      );
    }
  });

  it('answers one app type, 404 for an unknown one, and needs apps.read', async () => {
    const one = await h.as(t.key).get('/api/v1/app-types/segment');
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({
      appType: 'segment',
      category: 'customer_data',
      secretFields: ['writeKey'],
    });
    const unknown = await h.as(t.key).get('/api/v1/app-types/myspace');
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const usageOnly = await t.keyWith(['usage.read']);
    expect((await h.as(usageOnly).get('/api/v1/app-types')).status).toBe(403);
    expect((await h.as('').get('/api/v1/app-types').unset('Authorization')).status).toBe(401);
  });
});
