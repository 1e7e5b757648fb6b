import fc from 'fast-check';
import request from 'supertest';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

// Property: whatever body and headers arrive, /collect answers with a documented 2xx or 4xx
// body and never a 5xx, and the process does not crash.
describe('POST /collect under arbitrary input (fast-check)', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('fuzz', { backstopEps: 1_000_000 });
  });
  afterAll(() => h.close());

  const jsonish = fc.oneof(
    fc.json(),
    fc.string(),
    fc.jsonValue().map((v) => JSON.stringify({ batch: v })),
    fc.array(fc.jsonValue(), { maxLength: 5 }).map((batch) => JSON.stringify({ batch })),
    fc
      .record({
        type: fc.constantFrom('track', 'page', 'identify', 'group', 'alias', 'x'),
        messageId: fc.string(),
        timestamp: fc.string(),
        anonymousId: fc.string(),
        event: fc.string(),
        context: fc.jsonValue(),
      })
      .map((e) => JSON.stringify(e)),
    fc.constant(JSON.stringify({ batch: [event()] })),
  );

  it('never answers 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        jsonish,
        fc.constantFrom(
          'application/json',
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/octet-stream',
        ),
        fc.option(fc.constantFrom('valid', 'wk_nope', '', ' ', 'Bearer', '\u00ff')),
        fc.option(fc.string()),
        async (body, contentType, key, origin) => {
          let test = collect(h.app).set('Content-Type', contentType);
          if (key === 'valid') test = test.set('X-Write-Key', h.openWriteKey);
          else if (key !== null && /^[\x20-\x7e]*$/.test(key))
            test = test.set('Authorization', `Bearer ${key}`);
          if (origin !== null && /^[\x20-\x7e]+$/.test(origin)) test = test.set('Origin', origin);
          const response = await test.send(body);
          expect(response.status).toBeLessThan(500);
          expect(response.body).toHaveProperty('ok');
        },
      ),
      { numRuns: 300 },
    );
    expect((await request(h.app).get('/health')).status).toBe(200);
  });
});
