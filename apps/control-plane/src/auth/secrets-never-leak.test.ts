import request from 'supertest';
import { startHarness, TEST_INTERNAL_TOKEN, testDeliveryToken, type Harness } from '../testing/harness';

// Regression test: whatever a client does, no API response (the internal resolution aside,
// which exists to hand credentials to ingestion) and no log line carries an app credential,
// an API key or a write key in clear.
describe('secrets never leak (real PostgreSQL)', () => {
  let h: Harness;
  const responses: string[] = [];
  const secrets: string[] = [];
  const record = (response: request.Response) => {
    responses.push(JSON.stringify(response.body) + JSON.stringify(response.headers));
    return response;
  };

  beforeAll(async () => {
    h = await startHarness('secrets');
  });
  afterAll(() => h.close());

  it('holds across every endpoint, error path and log line', async () => {
    const t = await h.tenant();
    secrets.push(t.key);
    const credential = 'CRED-sk_live_9f8e7d6c5b4a';
    const configSecret = 'CFG-password-77';
    secrets.push(credential, configSecret);
    const as = h.as(t.key);

    // Refused (fields the app type does not have): the 422 names them, never their values.
    const refused = record(
      await as.post('/api/v1/apps').send({
        appType: 'amplitude',
        displayName: 'Amp',
        credentials: { apiKey: credential, nested: { secret: credential } },
        config: { password: configSecret, region: 'eu' },
      }),
    );
    expect(refused.status).toBe(422);
    const app = record(
      await as.post('/api/v1/apps').send({
        appType: 'amplitude',
        displayName: 'Amp',
        credentials: { apiKey: credential },
        config: { region: 'eu' },
      }),
    ).body.data;
    const web = record(await as.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Web' }))
      .body.data;
    record(await as.get('/api/v1/apps'));
    record(await as.get(`/api/v1/apps/${app.id}`));
    record(
      await as
        .patch(`/api/v1/apps/${app.id}`)
        .send({ credentials: { apiKey: credential }, config: { region: 'eu' } }),
    );
    record(
      await as
        .patch(`/api/v1/apps/${app.id}`)
        .send({ credentials: { apiKey: credential }, bogus: credential }),
    );
    record(
      await as
        .post('/api/v1/apps')
        .send({ appType: 'nope', displayName: 'x', credentials: { apiKey: credential } }),
    );
    record(
      await as
        .post('/api/v1/apps')
        .send({ appType: 'amplitude', displayName: 'Amp', credentials: { apiKey: 42, token: credential } }),
    );
    record(
      await as
        .post('/api/v1/apps')
        .set('Content-Type', 'application/json')
        .send(`{"credentials":{"apiKey":"${credential}"`),
    );

    const integration = record(
      await as.post('/api/v1/integrations').send({
        sourceAppId: web.id,
        destinationAppId: app.id,
        dataType: 'events',
        config: { global: { apiToken: configSecret }, tasks: [{ task_type: 'events' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
      }),
    ).body.data;
    record(await as.get(`/api/v1/integrations/${integration.id}`));
    record(await as.get('/api/v1/integrations'));

    const writeKey = await as.post('/api/v1/write-keys').send({ name: 'site' });
    const key = writeKey.body.data.key as string;
    secrets.push(key);
    record(await as.get('/api/v1/write-keys'));
    record(await as.get(`/api/v1/write-keys/${writeKey.body.data.id}`));
    record(
      await as.patch(`/api/v1/write-keys/${writeKey.body.data.id}`).send({ allowedOrigins: ['example.com'] }),
    );

    const resolved = await request(h.app)
      .post('/internal/v1/write-keys/resolve')
      .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
      .send({ writeKey: key });
    // Ingestion's resolution names the destination but never carries its credentials ...
    expect(resolved.body.data.destinations[0].appType).toBeDefined();
    record(resolved);
    // ... only the amplitude consumer's lookup does: its purpose.
    const lookedUp = await request(h.app)
      .post('/internal/v1/write-keys/lookup')
      .set('Authorization', `Bearer ${testDeliveryToken('amplitude')}`)
      .send({ writeKeyId: writeKey.body.data.id });
    expect(lookedUp.body.data.destinations[0].credentials.apiKey).toBe(credential);
    record(
      await request(h.app)
        .post('/internal/v1/write-keys/resolve')
        .set('Authorization', `Bearer ${t.key}`)
        .send({ writeKey: key }),
    );
    record(await request(h.app).get('/api/v1/apps').set('Authorization', `Bearer ${key}`));
    record(await h.as(`${t.key}x`).get('/api/v1/apps'));
    record(await as.delete(`/api/v1/apps/${app.id}`));

    await new Promise((resolve) => setImmediate(resolve));
    expect(h.logs.length).toBeGreaterThan(10);
    for (const secret of secrets) {
      expect(responses.filter((r) => r.includes(secret))).toEqual([]);
      expect(h.logs.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});
