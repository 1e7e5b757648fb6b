import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import {
  lookAlikeCredentials,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { AccountService } from '../accounts/account.service';
import { ApiKeyService } from '../auth/api-key.service';
import { scopes } from '../auth/scopes';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import {
  exited,
  killAll,
  requireBuiltControlPlane,
  startControlPlaneProcess,
} from '../testing/control-plane-process';
import { waitUntil } from '../testing/wait';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';

// The built control plane, as operators run it, SIGKILLed while its regulation worker waits on
// a vendor's answer in the middle of a regulation: another process takes the regulation over
// when the lease lapses and finishes it, sending again at most the batch that was in flight,
// never one it had recorded as sent, and marking the target done once.

interface Target {
  appType: string | null;
  status: string;
  attempts: number;
}

describe('the regulation worker survives a crash (built control plane, real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  let warehouse: ScratchWarehouse;
  let braze: LookAlikeServer;
  let key: string;
  const processes: ChildProcess[] = [];
  const credentialKeys = `k1:${randomBytes(32).toString('base64')}`;
  const prefix = `test.${randomUUID()}.`;

  const env = (port: number) => ({
    ...process.env,
    DATABASE_URL: db.url,
    WAREHOUSE_URL: warehouse.url,
    CREDENTIALS_ENCRYPTION_KEYS: credentialKeys,
    INTERNAL_TOKEN_INGESTION: randomBytes(24).toString('hex'),
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    KAFKA_TOPIC_PREFIX: prefix,
    DEAD_LETTER_INDEX_ENABLED: 'false',
    JOB_WORKER_ENABLED: 'false',
    SCHEDULER_ENABLED: 'false',
    USAGE_METERING_ENABLED: 'false',
    REGULATION_WORKER_INTERVAL_MS: '100',
    REGULATION_FENCE_DELAY_MS: '0',
    REGULATION_LEASE_MS: '1500',
    VENDOR_BASE_URL_BRAZE: braze.url,
    SHUTDOWN_TIMEOUT_MS: '60000',
  });

  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('regulation worker process');
    warehouse = await startScratchWarehouse('regulation worker process warehouse');
    braze = await startLookAlikeVendor('braze');
    const account = await new AccountService(db.dataSource).create('Crash test');
    key = (await new ApiKeyService(db.dataSource).issue(account.id, 'test', [...scopes])).apiKey;
  }, 60_000);
  afterAll(async () => {
    killAll(processes);
    await braze?.close();
    await warehouse?.drop();
    await db?.drop();
  });

  it('finishes after a SIGKILL mid-batch, sending no recorded batch twice', async () => {
    const first = await startControlPlaneProcess(env, processes);
    const api = (path: string) => request(first.base).post(path).set('Authorization', `Bearer ${key}`);
    const web = (await api('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Site' })).body.data
      .id;
    const app = await api('/api/v1/apps').send({
      appType: 'braze',
      displayName: 'Braze',
      credentials: lookAlikeCredentials.braze,
      config: { restEndpoint: 'https://rest.iad-01.braze.com' },
    });
    expect(app.status).toBe(201);
    const integration = await api('/api/v1/integrations').send({
      sourceAppId: web,
      destinationAppId: app.body.data.id,
      dataType: 'events',
      config: { global: {}, tasks: [{ task_type: 'events' }] },
      schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
    });
    expect(integration.status).toBe(201);
    // 120 ids: three requests of at most 50; the second is answered only after the kill.
    const ids = Array.from({ length: 120 }, (_, i) => `user-${i}-${randomUUID()}`);
    braze.delayNext(0);
    braze.delayNext(60_000);
    const created = await api('/api/v1/regulations').send({
      regulationType: 'SUPPRESS_WITH_DELETE',
      subjectType: 'USER_ID',
      subjectIds: ids,
    });
    expect(created.status).toBe(200);
    const id = created.body.data.regulateId as string;
    const deletes = () => braze.requests.filter((r) => r.path === '/users/delete');
    await waitUntil('the second request to reach Braze', async () => deletes().length >= 2);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const sentBeforeKill = deletes().map((r) => JSON.parse(r.body).external_ids as string[]);

    const second = await startControlPlaneProcess(env, processes);
    const regulation = async () =>
      (
        await request(second.base)
          .get(`/api/v1/regulations/${id}`)
          .set('Authorization', `Bearer ${key}`)
          .expect(200)
      ).body.data.regulation as { overallStatus: string; targets: Target[] };
    const finished = await waitUntil(
      'the second process to finish the regulation',
      async () => {
        const current = await regulation();
        return current.overallStatus !== 'RUNNING' && current;
      },
      60_000,
    );
    expect(finished.overallStatus).toBe('FINISHED');
    expect(finished.targets.find((t) => t.appType === 'braze')?.status).toBe('done');

    const batches = deletes().map((r) => JSON.parse(r.body).external_ids as string[]);
    // Before the kill: batch 1 answered, batch 2 in flight. After: batch 2 again, then batch 3.
    expect(sentBeforeKill).toEqual([ids.slice(0, 50), ids.slice(50, 100)]);
    expect(batches).toEqual([ids.slice(0, 50), ids.slice(50, 100), ids.slice(50, 100), ids.slice(100)]);
    // Done once: the regulation is finished with its raw ids erased, so no worker takes it again.
    const [row] = (await db.dataSource.query(
      'SELECT status, sealed_subjects, lease_owner FROM regulations WHERE id = $1',
      [id],
    )) as { status: string; sealed_subjects: string | null; lease_owner: string | null }[];
    expect(row).toEqual({ status: 'finished', sealed_subjects: null, lease_owner: null });
  }, 180_000);
});
