import { copyStatement, isWarehouseSchemaName, upsertFromJson } from './warehouse-statements';

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

  it('keeps the stored event of a message id', () => {
    expect(upsertFromJson('acct_1', 'events', ['message_id', 'event', 'properties'], 'message_id')).toBe(
      'INSERT INTO "acct_1"."events" AS stored ("message_id", "event", "properties") SELECT "message_id", "event", "properties" FROM json_populate_recordset(NULL::"acct_1"."events", $1::json) ORDER BY "message_id" ON CONFLICT ("message_id") DO NOTHING',
    );
  });

  // What the merge does to real rows is proven against PostgreSQL in warehouse-event-order.test.ts.
  it('updates a user only from a newer event, column by column, and trait by trait', () => {
    const sql = upsertFromJson(
      'acct_1',
      'users',
      ['message_id', 'user_id', 'email', 'traits', '_event_order', '_trait_orders'],
      'user_id',
    );
    const storedOrder = 'COALESCE(stored._event_order, (COALESCE(CASE WHEN isfinite(stored."timestamp")';
    expect(sql).toMatch(
      /^INSERT INTO "acct_1"."users" AS stored \("message_id", "user_id", "email", "traits", "_event_order", "_trait_orders"\) SELECT "message_id", "user_id", "email", "traits", "_event_order", "_trait_orders" FROM json_populate_recordset\(NULL::"acct_1"."users", \$1::json\) ORDER BY "user_id" ON CONFLICT \("user_id"\) DO UPDATE SET "message_id" = CASE WHEN \(EXCLUDED._event_order > /,
    );
    expect(sql).toContain(`"email" = CASE WHEN (EXCLUDED._event_order > ${storedOrder}`);
    expect(sql).toContain('THEN EXCLUDED."email" ELSE stored."email" END');
    expect(sql).toContain(
      "traits = COALESCE(stored.traits, '{}'::jsonb) || COALESCE((SELECT jsonb_object_agg(n.key, n.value)",
    );
    expect(sql).toContain(
      `COALESCE(COALESCE(EXCLUDED._trait_orders ->> n.key, EXCLUDED._event_order) COLLATE "C" > (CASE WHEN stored.traits ? n.key THEN COALESCE(stored._trait_orders ->> n.key, ${storedOrder}`,
    );
    expect(sql).toContain('_event_order = CASE WHEN (EXCLUDED._event_order > ');
    expect(sql).toContain('THEN EXCLUDED._event_order ELSE COALESCE(stored._event_order, ');
    expect(sql).toContain(
      "_trait_orders = COALESCE(stored._trait_orders, CASE WHEN jsonb_typeof(stored.traits) = 'object'",
    );
    // Each winning key's order is stored as a JSON string beside the stored orders.
    expect(sql).toContain(
      "END, '{}'::jsonb) || COALESCE((SELECT jsonb_object_agg(n.key, to_jsonb(COALESCE(EXCLUDED._trait_orders ->> n.key, EXCLUDED._event_order))) FROM jsonb_each(",
    );
    expect(sql).toContain('ELSE stored."email" END, traits = COALESCE(stored.traits, ');
    // The row's own event again wins no column, and no trait it set itself: the message ids in
    // the orders (after two 17-digit instants and their dots) must differ.
    expect(sql).toContain(
      'THEN EXCLUDED."email" ELSE stored."email" END'.replace(
        'THEN',
        'AND NOT stored.message_id IS NOT DISTINCT FROM EXCLUDED.message_id) THEN',
      ),
    );
    expect(sql).toContain(
      'AND substr(COALESCE(EXCLUDED._trait_orders ->> n.key, EXCLUDED._event_order), 37) IS DISTINCT FROM substr((CASE WHEN stored.traits ? n.key',
    );
    expect(sql).toMatch(
      / WHERE \(EXCLUDED._event_order > COALESCE\(stored._event_order, .*\) AND NOT stored.message_id IS NOT DISTINCT FROM EXCLUDED.message_id\) OR EXISTS \(SELECT 1 FROM jsonb_each\(COALESCE\(EXCLUDED.traits, '\{\}'::jsonb\)\) n WHERE COALESCE\(.*, true\) AND substr\(COALESCE\(EXCLUDED._trait_orders ->> n.key, EXCLUDED._event_order\), 37\) IS DISTINCT FROM stored.message_id\)$/,
    );
    expect(sql).not.toContain('"user_id" = ');
  });
});
