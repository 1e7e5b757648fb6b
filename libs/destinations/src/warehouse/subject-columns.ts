import { storableText, warehouseTables } from '@pipeline/events';
import type { SubjectIds, SubjectRowCounts, WarehouseTableName } from './warehouse-engine';

// Which columns of each warehouse table name a regulated subject, for both engines: a user id
// is matched where an id of a user can be (user_id, and an alias's previous_id), an anonymous
// id where an anonymous id can be (anonymous_id, and previous_id, which an alias may fill with
// either). Pure, so that both engines erase the same rows.

export const subjectTables: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];

/** Per table, the columns a user id and an anonymous id are matched against. */
export const subjectColumns: Record<WarehouseTableName, { user: string[]; anonymous: string[] }> = {
  events: { user: ['user_id'], anonymous: ['anonymous_id'] },
  users: { user: ['user_id'], anonymous: ['anonymous_id'] },
  groups: { user: ['user_id'], anonymous: ['anonymous_id'] },
  aliases: { user: ['user_id', 'previous_id'], anonymous: ['anonymous_id', 'previous_id'] },
};

/**
 * The columns of a group's row that describe the member whose event set it last: nulled on
 * PostgreSQL when that member is erased, while the group, its id and its traits stay.
 */
export const groupMemberColumns: readonly string[] = [
  'user_id',
  'anonymous_id',
  'session_id',
  ...Object.keys(warehouseTables.groups).filter((c) => c.startsWith('context_')),
];

/** The tables whose rows are single events, which a deletion cut-off bounds by received_at. */
export const cutOffTables: ReadonlySet<WarehouseTableName> = new Set(['events', 'aliases']);

export const noRows = (): SubjectRowCounts => ({ events: 0, users: 0, groups: 0, aliases: 0 });

/**
 * The ids as the rows hold them, without repeats: the door stored each id with NUL and unpaired
 * surrogates replaced by U+FFFD (storableText), so a regulation naming `a\u0000b` erases the
 * rows of `a\uFFFDb`, the id the door accepted for it. None empty: the door refuses one.
 */
export function distinctSubjects(subjects: SubjectIds): { userIds: string[]; anonymousIds: string[] } {
  const distinct = (ids: readonly string[]) => [
    ...new Set(ids.filter((id) => id.length > 0).map(storableText)),
  ];
  return { userIds: distinct(subjects.userIds), anonymousIds: distinct(subjects.anonymousIds) };
}
