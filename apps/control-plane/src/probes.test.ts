import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { createApp } from './composition';
import { createMigratedScratchDatabase } from './scratch-data-source';
import { TEST_CREDENTIAL_KEYS, TEST_INTERNAL_TOKENS } from './testing/harness';

describe('control plane probes (real PostgreSQL)', () => {
  it('/readyz follows the database and /livez does not; neither is in the API document', async () => {
    const own = await createMigratedScratchDatabase('control plane probes');
    const app = createApp({
      dataSource: own.dataSource,
      logger: createLogger({ service: 'test', stream: new PassThrough() }),
      credentialKeys: TEST_CREDENTIAL_KEYS,
      internalTokens: TEST_INTERNAL_TOKENS,
    });
    const ready = await request(app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ok: true, checks: { database: 'up' } });
    const live = await request(app).get('/livez');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ ok: true });
    const document = (await request(app).get('/api/v1/openapi.json')).body;
    expect(Object.keys(document.paths)).not.toEqual(expect.arrayContaining(['/livez']));
    expect(Object.keys(document.paths)).not.toEqual(expect.arrayContaining(['/readyz']));

    await own.drop();
    const down = await request(app).get('/readyz');
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ ok: false, checks: { database: 'down' }, failing: ['database'] });
    expect((await request(app).get('/livez')).status).toBe(200);
    // /health is unchanged.
    expect((await request(app).get('/health')).body).toEqual({ ok: false, database: 'down' });
  });
});
