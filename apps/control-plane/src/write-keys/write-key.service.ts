import { AccountLimiter } from '../accounts/account-limits';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import type { DataSource } from 'typeorm';
import { IsNull, Not } from 'typeorm';
import { issueToken } from '../auth/secret-token';
import { conflict, notFound } from '../http/api-errors';
import { requireId } from '../http/ids';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import { normalizeAllowedOrigins } from './allowed-origins';
import {
  checkRateLimits,
  defaultWriteKeyRateLimitCeilings,
  type WriteKeyRateLimitCeilings,
} from './rate-limits';
import type {
  CreateWriteKeyBody,
  UpdateWriteKeyBody,
  WriteKeyCreated,
  WriteKeyState,
  WriteKeyView,
} from './write-key.dto';
import { WriteKeyEntity } from './write-key.entity';
import { checkName, toView } from './write-key-view';

export class WriteKeyService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly ceilings: WriteKeyRateLimitCeilings = defaultWriteKeyRateLimitCeilings,
    private readonly changes?: TenantChangePublisher,
    private readonly limiter: AccountLimiter = new AccountLimiter(),
  ) {}

  private get repository() {
    return this.dataSource.getRepository(WriteKeyEntity);
  }

  async create(accountId: string, body: CreateWriteKeyBody): Promise<WriteKeyCreated> {
    const rateLimits = body.rateLimits && checkRateLimits(body.rateLimits, this.ceilings);
    const { token, prefix, hash } = issueToken('wk');
    const name = checkName(body.name);
    const allowedOrigins = normalizeAllowedOrigins(body.allowedOrigins ?? []);
    const record = await this.dataSource.transaction(async (tx) => {
      await this.limiter.reserve(tx, accountId, 'write_keys');
      const repository = tx.getRepository(WriteKeyEntity);
      return repository.save(
        repository.create({
          accountId,
          name,
          keyPrefix: prefix,
          keyHash: hash,
          allowedOrigins,
          rateLimitEventsPerSecond: rateLimits?.eventsPerSecond ?? null,
          rateLimitEventsPerDay: rateLimits?.eventsPerDay ?? null,
          revokedAt: null,
        }),
      );
    });
    return { ...toView(record), key: token };
  }

  /** Active keys by default; `state=revoked` lists the revoked ones. Newest first. */
  async list(
    accountId: string,
    state: WriteKeyState | undefined,
    page: PageRequest,
  ): Promise<ListResponse<WriteKeyView>> {
    const [rows, total] = await this.repository.findAndCount({
      where: { accountId, revokedAt: state === 'revoked' ? Not(IsNull()) : IsNull() },
      order: { createdAt: 'DESC', id: 'DESC' },
      skip: page.offset,
      take: page.limit,
    });
    return listResponse(rows.map(toView), total, page);
  }

  async get(accountId: string, id: string): Promise<WriteKeyView> {
    return toView(await this.find(accountId, id));
  }

  async update(accountId: string, id: string, body: UpdateWriteKeyBody): Promise<WriteKeyView> {
    const record = await this.find(accountId, id);
    if (record.revokedAt) throw conflict('write_key_revoked', `Write key ${record.id} is revoked`);
    if (body.name !== undefined) record.name = checkName(body.name);
    if (body.allowedOrigins !== undefined)
      record.allowedOrigins = normalizeAllowedOrigins(body.allowedOrigins);
    if (body.rateLimits !== undefined) {
      const rateLimits = checkRateLimits(body.rateLimits, this.ceilings);
      record.rateLimitEventsPerSecond = rateLimits.eventsPerSecond;
      record.rateLimitEventsPerDay = rateLimits.eventsPerDay;
    }
    const view = toView(await this.repository.save(record));
    // New origins or limits: ingestion's cached copy of the key must not outlive them.
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return view;
  }

  /**
   * Revokes the key. Every ingestion instance hears it through Redis and refuses the key from
   * its next request; without a live subscription an instance keeps a key at most 10 s
   * (docs/tracking-api.md, "Revoked write keys"). Idempotent: a repeat broadcasts again.
   */
  async revoke(accountId: string, id: string): Promise<WriteKeyView> {
    const record = await this.find(accountId, id);
    if (!record.revokedAt) {
      record.revokedAt = new Date();
      await this.repository.save(record);
    }
    await this.changes?.publish({ kind: 'write_key_revoked', accountId, writeKeyId: record.id });
    return toView(record);
  }

  /**
   * Gives the key a new secret, answered once like create's; the old secret is refused from
   * then on. The key keeps its id, name, origins, limits and debugger events. Ingestion hears it
   * as a revocation of this key id, which drops the old secret's cached entry on every instance
   * (the new secret was never cached). 409 `write_key_revoked` for a revoked key;
   * 409 `write_key_rotated` when another rotation changed the secret in the meantime (that one's
   * answer holds the key in use).
   */
  async rotate(accountId: string, id: string): Promise<WriteKeyCreated> {
    const record = await this.find(accountId, id);
    if (record.revokedAt) throw conflict('write_key_revoked', `Write key ${record.id} is revoked`);
    const { token, prefix, hash } = issueToken('wk');
    const updated = await this.repository.update(
      { id: record.id, accountId, keyHash: record.keyHash, revokedAt: IsNull() },
      { keyPrefix: prefix, keyHash: hash },
    );
    if (updated.affected !== 1) {
      const now = await this.find(accountId, id);
      if (now.revokedAt) throw conflict('write_key_revoked', `Write key ${record.id} is revoked`);
      throw conflict('write_key_rotated', `Write key ${record.id} was rotated by another request meanwhile`);
    }
    await this.changes?.publish({ kind: 'write_key_revoked', accountId, writeKeyId: record.id });
    return { ...toView(await this.find(accountId, id)), key: token };
  }

  private async find(accountId: string, id: string): Promise<WriteKeyEntity> {
    const record = await this.repository.findOneBy({ id: requireId('write key', id), accountId });
    if (!record) throw notFound('write key', id);
    return record;
  }
}
