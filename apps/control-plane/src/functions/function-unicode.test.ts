import { createHash } from 'node:crypto';
import fc from 'fast-check';
import request from 'supertest';
import {
  startHarness,
  testDeliveryToken,
  TEST_WAREHOUSE_TOKEN,
  type Harness,
  type Tenant,
} from '../testing/harness';

// Code crosses JSON (the request and every answer) and SQL (the draft and the version as text):
// code of any Unicode, astral characters, line and paragraph separators and lone combining marks
// included, comes back byte for byte, with the sha256 of exactly its UTF-8, through every way out.

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * Code PostgreSQL's text can hold: no U+0000 (answered 400; tested in functions.test.ts), not
 * blank. fast-check's `binary` unit is any code point, never half a surrogate pair.
 */
const code = fc
  .string({ unit: 'binary', minLength: 1, maxLength: 300 })
  .filter((value) => !value.includes('\u0000') && value.trim() !== '');

describe('function code of any Unicode round-trips (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  beforeAll(async () => {
    h = await startHarness('function unicode');
    t = await h.tenant();
  });
  afterAll(() => h.close());

  it('keeps the code unchanged, with its sha256, through create, publish, version read and the warehouse lookup', async () => {
    const writeKeyId = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data
      .id as string;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(code, async (text) => {
        runs += 1;
        const created = await h
          .as(t.key)
          .post('/api/v1/functions')
          .send({ name: `fn ${runs}`, kind: 'destination', code: text });
        expect(created.status).toBe(201);
        const id = created.body.data.id as string;
        expect([created.body.data.draftCode, created.body.data.draftCodeHash]).toEqual([text, sha256(text)]);

        const published = await h.as(t.key).post(`/api/v1/functions/${id}/versions`);
        expect([published.status, published.body.data.code, published.body.data.codeHash]).toEqual([
          201,
          text,
          sha256(text),
        ]);
        const versionId = published.body.data.id as string;
        const read = await h.as(t.key).get(`/api/v1/functions/${id}/versions/${versionId}`);
        expect([read.body.data.code, read.body.data.codeHash]).toEqual([text, sha256(text)]);
        expect((await h.as(t.key).get(`/api/v1/functions/${id}`)).body.data.draftChanged).toBe(false);

        await h
          .as(t.key)
          .put('/api/v1/warehouse/function')
          .send({ functionVersionId: versionId })
          .expect(200);
        const placed = await request(h.app)
          .post('/internal/v1/warehouses/resolve')
          .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
          .send({ accountId: t.accountId });
        expect(placed.body.data.function).toEqual({
          functionId: id,
          versionId,
          version: 1,
          code: text,
        });
        await h.as(t.key).delete('/api/v1/warehouse/function').expect(204);
        await h.as(t.key).delete(`/api/v1/functions/${id}`).expect(204);
      }),
      { numRuns: 40 },
    );
    // The forwarding lookup never carried the warehouse's code.
    const forwarding = await request(h.app)
      .post('/internal/v1/write-keys/lookup')
      .set('Authorization', `Bearer ${testDeliveryToken('webhook')}`)
      .send({ writeKeyId });
    expect(forwarding.status).toBe(200);
    expect(forwarding.body.data).not.toHaveProperty('warehouseFunction');
  });
});
