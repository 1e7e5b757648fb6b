import { invalidField } from '../http/api-errors';
import { iso, isoOrNull } from '../http/list-query';
import type { WriteKeyView } from './write-key.dto';
import type { WriteKeyEntity } from './write-key.entity';

/** A key's name as stored: trimmed, never blank. */
export function checkName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw invalidField('body.name', 'must not be blank');
  return trimmed;
}

/** What the API answers for a key: its prefix and a masked form, never the key or its hash. */
export function toView(record: WriteKeyEntity): WriteKeyView {
  return {
    id: record.id,
    name: record.name,
    keyPrefix: record.keyPrefix,
    maskedKey: `${record.keyPrefix}…`,
    allowedOrigins: record.allowedOrigins,
    state: record.revokedAt ? 'revoked' : 'active',
    rateLimits: {
      eventsPerSecond: record.rateLimitEventsPerSecond,
      eventsPerDay: record.rateLimitEventsPerDay,
    },
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
    revokedAt: isoOrNull(record.revokedAt),
  };
}
