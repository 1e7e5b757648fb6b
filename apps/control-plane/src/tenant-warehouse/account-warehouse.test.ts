import request from 'supertest';
import { startHarness, TEST_WAREHOUSE_TOKEN, type Harness } from '../testing/harness';
import { PLATFORM_STATUS_DETAIL } from './tenant-status-detail';

// Security review 2026-11-29, finding 6: GET /api/v1/warehouse showed every account on a
// platform warehouse the driver's text, with the operator's hosts, addresses and users.
describe('GET /api/v1/warehouse on the service’s warehouse (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('tenant warehouse status');
  });
  afterAll(() => h.close());

  const report = (warehouseId: string, status: string, detail?: string) =>
    request(h.app)
      .post(`/internal/v1/warehouses/${warehouseId}/status`)
      .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
      .send(detail === undefined ? { status } : { status, detail });

  it.each([
    ['unavailable', 'ECONNREFUSED connect ECONNREFUSED 10.0.3.7:5432'],
    ['unavailable', 'ENOTFOUND getaddrinfo ENOTFOUND warehouse-7.pipeline.svc.cluster.local'],
    ['misconfigured', '28P01 password authentication failed for user "pipeline_loader"'],
    ['misconfigured', '3D000 database "warehouse_eu1" does not exist'],
  ] as const)('shows %s with its fixed text, never the driver’s %j', async (status, detail) => {
    const tenant = await h.tenant();
    const before = await h.as(tenant.key).get('/api/v1/warehouse');
    const { warehouseId, owner } = before.body.data as { warehouseId: string; owner: string };
    expect(owner).toBe('platform');
    expect((await report(warehouseId, status, detail)).status).toBe(204);
    // The operator still reads what was met.
    expect((await h.services.warehouses.find(warehouseId)).statusDetail).toBe(detail);

    const answer = await h.as(tenant.key).get('/api/v1/warehouse');
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({
      owner: 'platform',
      status,
      statusDetail: PLATFORM_STATUS_DETAIL[status],
    });
    for (const secret of [
      '10.0.3.7',
      '5432',
      'warehouse-7',
      'svc.cluster',
      'pipeline_loader',
      'warehouse_eu1',
    ])
      expect(answer.text).not.toContain(secret);

    expect((await report(warehouseId, 'active')).status).toBe(204);
    const healed = await h.as(tenant.key).get('/api/v1/warehouse');
    expect(healed.body.data).toMatchObject({ status: 'active', statusDetail: null });
  });
});
