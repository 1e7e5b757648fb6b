import request from 'supertest';
import { forwardingAppTypes } from '@pipeline/catalog';
import { ConfigError, loadConfig } from '@pipeline/config';
import { InternalTokens } from '../auth/internal-tokens';
import { controlPlaneConfigSchema } from '../config';
import {
  startHarness,
  TEST_CREDENTIAL_KEYS,
  TEST_INTERNAL_TOKEN,
  testDeliveryToken,
  type Harness,
} from '../testing/harness';

// One token per internal caller. Ingestion's token resolves write keys and
// nothing else; each forwarding consumer's token looks tenants up and gets its own app type's
// destinations and credentials only.
describe('internal tokens: each caller its own token and scope (real PostgreSQL)', () => {
  let h: Harness;
  let writeKeyId: string;
  let writeKey: string;
  let amplitudeIntegration: string;
  let webhookIntegration: string;

  const call = (path: 'resolve' | 'lookup', token: string, body: object) =>
    request(h.app).post(`/internal/v1/write-keys/${path}`).set('Authorization', `Bearer ${token}`).send(body);
  const lookup = (token: string) => call('lookup', token, { writeKeyId });

  beforeAll(async () => {
    h = await startHarness('internal tokens');
    const tenant = await h.tenant();
    const api = h.as(tenant.key);
    const app = async (body: object) => (await api.post('/api/v1/apps').send(body)).body.data.id as string;
    const web = await app({ appType: 'web_tracking', displayName: 'Site' });
    const amplitude = await app({
      appType: 'amplitude',
      displayName: 'Amp',
      credentials: { apiKey: 'amplitude-secret-key' },
      config: { region: 'eu' },
    });
    const hook = await app({
      appType: 'webhook',
      displayName: 'Hook',
      credentials: { signingSecret: 'webhook-signing-secret' },
      config: {},
    });
    const integration = async (destinationAppId: string) => {
      const response = await api.post('/api/v1/integrations').send({
        sourceAppId: web,
        destinationAppId,
        dataType: 'events',
        config: { global: {}, tasks: [{ task_type: 'events' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
      });
      expect(response.status).toBe(201);
      return response.body.data.id as string;
    };
    amplitudeIntegration = await integration(amplitude);
    webhookIntegration = await integration(hook);
    const created = (await api.post('/api/v1/write-keys').send({ name: 'site' })).body.data;
    writeKeyId = created.id;
    writeKey = created.key;
  });
  afterAll(() => h.close());

  it("refuses ingestion's token on /lookup with 401 invalid_service_token, and carries no credential", async () => {
    const response = await lookup(TEST_INTERNAL_TOKEN);
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({ status: 401, code: 'invalid_service_token' });
    expect(response.text).not.toContain('amplitude-secret-key');
    // The same answer as an unknown token: nobody learns which endpoint a token opens.
    const unknown = await lookup('x'.repeat(48));
    expect([unknown.status, unknown.body.code]).toEqual([401, 'invalid_service_token']);
  });

  it("refuses a delivery consumer's token on /resolve", async () => {
    const response = await call('resolve', testDeliveryToken('webhook'), { writeKey });
    expect([response.status, response.body.code]).toEqual([401, 'invalid_service_token']);
    // Ingestion's own token still resolves it.
    const resolved = await call('resolve', TEST_INTERNAL_TOKEN, { writeKey });
    expect([resolved.status, resolved.body.data.writeKeyId]).toEqual([200, writeKeyId]);
  });

  it('gives the webhook consumer its webhook destination and no Amplitude key', async () => {
    const response = await lookup(testDeliveryToken('webhook'));
    expect(response.status).toBe(200);
    expect(response.body.data.destinations).toEqual([
      expect.objectContaining({
        integrationId: webhookIntegration,
        appType: 'webhook',
        credentials: { signingSecret: 'webhook-signing-secret' },
      }),
    ]);
    expect(response.text).not.toContain('amplitude-secret-key');
    expect(response.text).not.toContain(amplitudeIntegration);
  });

  it('gives the amplitude consumer its own destination only', async () => {
    const response = await lookup(testDeliveryToken('amplitude'));
    expect(response.status).toBe(200);
    expect(
      response.body.data.destinations.map((d: { integrationId: string; credentials: unknown }) => [
        d.integrationId,
        d.credentials,
      ]),
    ).toEqual([[amplitudeIntegration, { apiKey: 'amplitude-secret-key' }]]);
    expect(response.text).not.toContain('webhook-signing-secret');
  });

  it('gives a consumer without integrations of its kind an empty list', async () => {
    const response = await lookup(testDeliveryToken('braze'));
    expect([response.status, response.body.data.writeKeyId, response.body.data.destinations]).toEqual([
      200,
      writeKeyId,
      [],
    ]);
  });
});

describe('internal tokens: configuration', () => {
  const base = { CREDENTIALS_ENCRYPTION_KEYS: TEST_CREDENTIAL_KEYS };
  const problems = (env: Record<string, string>): string[] => {
    try {
      loadConfig(controlPlaneConfigSchema, env);
      return [];
    } catch (error) {
      if (error instanceof ConfigError) return [...error.problems];
      throw error;
    }
  };

  it("requires ingestion's token and offers one variable per forwarding kind and the warehouse consumer", () => {
    expect(problems(base)).toEqual([expect.stringMatching(/^INTERNAL_TOKEN_INGESTION is required/)]);
    const variables = Object.keys(controlPlaneConfigSchema.shape).filter((k) => k.startsWith('INTERNAL_'));
    expect(variables.sort()).toEqual(
      [
        'INTERNAL_TOKEN_INGESTION',
        ...forwardingAppTypes.map((t) => `INTERNAL_TOKEN_DELIVERY_${t.toUpperCase()}`),
        'INTERNAL_TOKEN_DELIVERY_WAREHOUSE',
      ].sort(),
    );
  });

  it('refuses short tokens and one token for two callers, without echoing them', () => {
    const shared = 's'.repeat(40);
    expect(
      problems({ ...base, INTERNAL_TOKEN_INGESTION: shared, INTERNAL_TOKEN_DELIVERY_WEBHOOK: shared }),
    ).toEqual([
      'INTERNAL_TOKEN_DELIVERY_WEBHOOK=[redacted]: must differ from INTERNAL_TOKEN_INGESTION: every caller has its own token',
    ]);
    expect(
      problems({
        ...base,
        INTERNAL_TOKEN_INGESTION: 'i'.repeat(40),
        INTERNAL_TOKEN_DELIVERY_WAREHOUSE: shared,
        OPERATOR_API_TOKEN: shared,
      }),
    ).toEqual([
      'OPERATOR_API_TOKEN=[redacted]: must differ from INTERNAL_TOKEN_DELIVERY_WAREHOUSE: every caller has its own token',
    ]);
    expect(problems({ ...base, INTERNAL_TOKEN_INGESTION: shared, OPERATOR_API_TOKEN: 'short' })).toEqual([
      'OPERATOR_API_TOKEN=[redacted]: must have at least 32 characters',
    ]);
    expect(
      problems({ ...base, INTERNAL_TOKEN_INGESTION: shared, INTERNAL_TOKEN_DELIVERY_AMPLITUDE: 'short' }),
    ).toEqual(['INTERNAL_TOKEN_DELIVERY_AMPLITUDE=[redacted]: must have at least 32 characters']);
  });

  it('maps each configured token to its caller, and nothing else to anyone', () => {
    const ingestion = 'i'.repeat(40);
    const webhook = 'w'.repeat(40);
    const warehouse = 'h'.repeat(40);
    const operator = 'o'.repeat(40);
    const tokens = InternalTokens.fromConfig(
      loadConfig(controlPlaneConfigSchema, {
        ...base,
        INTERNAL_TOKEN_INGESTION: ingestion,
        INTERNAL_TOKEN_DELIVERY_WEBHOOK: webhook,
        INTERNAL_TOKEN_DELIVERY_WAREHOUSE: warehouse,
        OPERATOR_API_TOKEN: operator,
      }),
      forwardingAppTypes,
    );
    expect(tokens.callerOf(ingestion)).toEqual({ caller: 'ingestion' });
    expect(tokens.callerOf(webhook)).toEqual({ caller: 'delivery', appType: 'webhook' });
    expect(tokens.callerOf(warehouse)).toEqual({ caller: 'warehouse' });
    for (const other of ['', 'i'.repeat(39), `${webhook}x`, 'a'.repeat(40), operator])
      expect(tokens.callerOf(other)).toBeNull();
  });
});
