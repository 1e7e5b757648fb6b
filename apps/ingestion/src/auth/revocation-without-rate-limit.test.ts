import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneClient, TenantChangeSubscriber } from '@pipeline/tenancy';
import { AccountService } from '@pipeline/control-plane/accounts/account.service';
import { ApiKeyService } from '@pipeline/control-plane/auth/api-key.service';
import { scopes } from '@pipeline/control-plane/auth/scopes';
import {
  createMigratedScratchDatabase,
  type MigratedScratchDatabase,
} from '@pipeline/control-plane/scratch-data-source';
import {
  killAll,
  requireBuiltControlPlane,
  startControlPlaneProcess,
  until,
} from '@pipeline/control-plane/testing/control-plane-process';
import { HostedAuthenticator } from './hosted-authenticator';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const HOUR_MS = 3_600_000;
const logger = createLogger({ service: 'revocation-process-test', stream: new PassThrough() });

// The built control plane, as operators run it, with API_RATE_LIMIT_ENABLED=false.
// Its tenant-change publisher used to share the rate limiter's Redis connection, which is not
// made when the limit is off: revocations were never broadcast, and an ingestion instance that
// hears changes kept a revoked key for its whole cache TTL (here an hour).
describe('revocation with the API rate limit off (built control plane, real PostgreSQL and Redis)', () => {
  let db: MigratedScratchDatabase;
  const processes: ChildProcess[] = [];
  const subscribers: TenantChangeSubscriber[] = [];
  const ingestionToken = randomBytes(24).toString('hex');

  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('revocation without rate limit');
  });
  afterAll(async () => {
    await Promise.all(subscribers.map((subscriber) => subscriber.stop()));
    killAll(processes);
    await db?.drop();
  });

  it("refuses A's revoked key once it is heard, while ingestion's cache never expires; B's key stays", async () => {
    const cp = await startControlPlaneProcess(
      (port) => ({
        ...process.env,
        DATABASE_URL: db.url,
        CREDENTIALS_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        INTERNAL_TOKEN_INGESTION: ingestionToken,
        REDIS_URL,
        API_RATE_LIMIT_ENABLED: 'false',
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        TASK_WORKER_ENABLED: 'false',
        JOB_WORKER_ENABLED: 'false',
        SCHEDULER_ENABLED: 'false',
        DEAD_LETTER_INDEX_ENABLED: 'false',
        USAGE_METERING_ENABLED: 'false',
      }),
      processes,
    );
    const accounts = new AccountService(db.dataSource);
    const apiKeys = new ApiKeyService(db.dataSource);
    const writeKeyOf = async (name: string) => {
      const account = await accounts.create(name, []);
      const apiKey = (await apiKeys.issue(account.id, 'test', [...scopes])).apiKey;
      const api = (method: 'post' | 'delete', path: string) =>
        request(cp.base)[method](path).set('Authorization', `Bearer ${apiKey}`);
      const created = await api('post', '/api/v1/write-keys').send({ name: 'site' });
      expect(created.status).toBe(201);
      return { api, accountId: account.id, ...(created.body.data as { id: string; key: string }) };
    };
    const { api, id, key } = await writeKeyOf('Revocation');
    const other = await writeKeyOf('Other');

    // What hosted ingestion builds in composition.ts: a cache that trusts the subscription while
    // it is live; on a stopped clock, so no entry expires and only a heard revocation drops one.
    const authenticator = new HostedAuthenticator(
      new ControlPlaneClient(cp.base, ingestionToken, logger),
      { validTtlMs: HOUR_MS, invalidTtlMs: HOUR_MS, hearsRevocations: () => subscriber.live },
      logger,
      () => Date.UTC(2026, 0, 15, 12, 0, 0),
    );
    const subscriber = TenantChangeSubscriber.start(
      { REDIS_URL },
      (event) => authenticator.invalidate(event),
      logger,
    );
    subscribers.push(subscriber);
    await until(async () => subscriber.live, 10_000);
    expect((await authenticator.authenticate(key)).writeKeyId).toBe(id);
    expect(await authenticator.authenticate(other.key)).toMatchObject({
      accountId: other.accountId,
      writeKeyId: other.id,
    });

    expect((await api('delete', `/api/v1/write-keys/${id}`)).status).toBe(200);
    const refused = () =>
      authenticator.authenticate(key).then(
        () => false,
        (error: { code?: string }) => error.code === 'invalid_write_key',
      );
    await until(refused, 10_000);
    // The other account's key is still served from the cache, not asked again.
    expect(authenticator.isKnownValid(other.key)).toBe(true);
    expect(authenticator.lookups).toBe(3);
  }, 120_000);
});
