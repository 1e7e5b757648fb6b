import { startStripeLookAlike, type SourceLookAlike } from '@pipeline/connectors/testing';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

// POST /api/v1/apps/{id}/test-connection for an app that imports: the connector's own check
// against the Stripe look-alike (VENDOR_BASE_URL_STRIPE), its refusal at the credential field.

const RIGHT = 'sk_test_connection_right';
let h: Harness;
let t: Tenant;
let stripe: SourceLookAlike;

beforeAll(async () => {
  stripe = await startStripeLookAlike({ secret: RIGHT });
  h = await startHarness('source app connection', {
    // Port 9 on loopback: nothing listens, the connection is refused.
    connectors: { baseUrls: { stripe: stripe.url, hubspot: 'http://127.0.0.1:9' } },
  });
  t = await h.tenant();
});

afterAll(async () => {
  await h?.close();
  await stripe?.close();
});

const create = async (body: Record<string, unknown>) => {
  const created = await h.as(t.key).post('/api/v1/apps').send(body);
  expect(created.status).toBe(201);
  return created.body.data.id as string;
};
const test = (id: string) => h.as(t.key).post(`/api/v1/apps/${id}/test-connection`);

describe('test-connection of a source app', () => {
  it('answers 422 credentials_rejected at the key field, then 200 once the key is right', async () => {
    const id = await create({
      appType: 'stripe',
      displayName: 'stripe',
      credentials: { secretKey: 'sk_test_wrong' },
    });
    const refused = await test(id);
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'credentials_rejected',
      errors: [{ path: 'credentials.secretKey', message: 'refused by the vendor (stripe answered 401)' }],
    });
    expect(JSON.stringify(refused.body)).not.toContain('sk_test_wrong');
    expect(stripe.requests.at(-1)).toEqual({ path: '/v1/customers?limit=1', status: 401 });

    const fixed = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ credentials: { secretKey: RIGHT } });
    expect(fixed.status).toBe(200);
    const passed = await test(id);
    expect([passed.status, passed.body.data]).toEqual([200, { ok: true, schemaCreated: false }]);
    expect(stripe.requests.at(-1)).toEqual({ path: '/v1/customers?limit=1', status: 200 });
  });

  it('answers connection_failed when the vendor cannot be reached, credentials_required without credentials', async () => {
    const hubspot = await create({
      appType: 'hubspot',
      displayName: 'hubspot',
      credentials: { accessToken: 'pat-1' },
    });
    const unreachable = await test(hubspot);
    expect([unreachable.status, unreachable.body.code]).toEqual([422, 'connection_failed']);
    const draft = await create({
      appType: 'shopify',
      displayName: 'shop draft',
      config: { shop: 'example' },
    });
    const noCredentials = await test(draft);
    expect([noCredentials.status, noCredentials.body.code]).toEqual([422, 'credentials_required']);
    expect(noCredentials.body.errors).toEqual([
      { path: 'credentials', message: 'set the credentials first' },
    ]);
  });
});
