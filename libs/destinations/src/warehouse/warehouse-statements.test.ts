import {
  copyStatement,
  isWarehouseSchemaName,
  stagingName,
  stagingTablesStatement,
  upsertFromStaging,
} from './warehouse-statements';

describe('isWarehouseSchemaName', () => {
  it('takes plain lower-case names of at most 63 characters', () => {
    expect(['acct_1', '_a', 'a', `a${'b'.repeat(62)}`].map(isWarehouseSchemaName)).toEqual([
      true,
      true,
      true,
      true,
    ]);
  });

  it('refuses anything a quoted identifier could turn into another schema', () => {
    const names = [
      '',
      '1acct',
      'Acct',
      'acct-1',
      'acct.x',
      'a"b',
      'acct 1',
      `a${'b'.repeat(63)}`,
      'acct\n',
      'public;drop',
    ];
    expect(names.map(isWarehouseSchemaName)).toEqual(names.map(() => false));
  });
});

describe('the warehouse writer’s SQL', () => {
  it('COPYs into the quoted columns in their order', () => {
    expect(copyStatement('"acct_1"."events"', ['message_id', 'we"ird'])).toBe(
      'COPY "acct_1"."events" ("message_id", "we""ird") FROM STDIN',
    );
  });

  it('stages each table in the connection’s temporary schema, typed, emptied at commit', () => {
    expect(stagingName('users')).toBe('pg_temp."stage_users"');
    expect(
      stagingTablesStatement({
        events: { message_id: 'text', properties: 'jsonb' },
        users: { user_id: 'text', 'odd"name': 'integer' },
      }),
    ).toBe(
      [
        'CREATE TEMPORARY TABLE IF NOT EXISTS "stage_events" ("message_id" text, "properties" jsonb) ON COMMIT DELETE ROWS;',
        'CREATE TEMPORARY TABLE IF NOT EXISTS "stage_users" ("user_id" text, "odd""name" integer) ON COMMIT DELETE ROWS;',
      ].join('\n'),
    );
  });

  it('keeps the stored event of a message id', () => {
    expect(upsertFromStaging('acct_1', 'events', ['message_id', 'event', 'properties'], 'message_id')).toBe(
      'INSERT INTO "acct_1"."events" ("message_id", "event", "properties") SELECT "message_id", "event", "properties" FROM pg_temp."stage_events" ORDER BY "message_id" ON CONFLICT ("message_id") DO NOTHING',
    );
  });

  it('updates a user with the latest values and merged traits, unless it is the same message', () => {
    expect(
      upsertFromStaging('acct_1', 'users', ['message_id', 'user_id', 'email', 'traits'], 'user_id'),
    ).toBe(
      'INSERT INTO "acct_1"."users" ("message_id", "user_id", "email", "traits") SELECT "message_id", "user_id", "email", "traits" FROM pg_temp."stage_users" ORDER BY "user_id" ON CONFLICT ("user_id") DO UPDATE SET "message_id" = EXCLUDED."message_id", "email" = EXCLUDED."email", traits = COALESCE("acct_1"."users".traits, \'{}\'::jsonb) || EXCLUDED.traits WHERE "acct_1"."users".message_id IS DISTINCT FROM EXCLUDED.message_id',
    );
  });
});
