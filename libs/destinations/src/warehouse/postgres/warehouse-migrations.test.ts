import { addColumns, conflictKey, quoteIdent, warehouseMigrations } from './warehouse-ddl';

// The migrations' text without a database (mutation tests run these); warehouse-ddl.test.ts
// applies them to real PostgreSQL.
describe('warehouse migrations (text)', () => {
  it('migration 1 is the DDL as it shipped, character for character', () => {
    expect(warehouseMigrations[0]?.version).toBe(1);
    expect(warehouseMigrations[0]?.statements('acct_frozen')).toEqual([
      'CREATE TABLE IF NOT EXISTS "acct_frozen"."events" ("message_id" text PRIMARY KEY, "anonymous_id" text, "user_id" text, "session_id" text, "timestamp" timestamptz, "original_timestamp" timestamptz, "sent_at" timestamptz, "received_at" timestamptz, "context_source" text, "context_library_name" text, "context_library_version" text, "context_page_url" text, "context_page_path" text, "context_page_title" text, "context_page_referrer" text, "context_screen_width" integer, "context_screen_height" integer, "context_campaign_source" text, "context_campaign_medium" text, "context_campaign_name" text, "context_campaign_term" text, "context_campaign_content" text, "context_click_ids" jsonb, "context_consent" jsonb, "context_browser" text, "context_os" text, "context_device" text, "context_language" text, "context_locale" text, "context_user_agent" text, "context_ip" text, "context_extra" jsonb, "type" text, "event" text, "name" text, "properties" jsonb)',
      'CREATE TABLE IF NOT EXISTS "acct_frozen"."users" ("message_id" text, "anonymous_id" text, "user_id" text PRIMARY KEY, "session_id" text, "timestamp" timestamptz, "original_timestamp" timestamptz, "sent_at" timestamptz, "received_at" timestamptz, "context_source" text, "context_library_name" text, "context_library_version" text, "context_page_url" text, "context_page_path" text, "context_page_title" text, "context_page_referrer" text, "context_screen_width" integer, "context_screen_height" integer, "context_campaign_source" text, "context_campaign_medium" text, "context_campaign_name" text, "context_campaign_term" text, "context_campaign_content" text, "context_click_ids" jsonb, "context_consent" jsonb, "context_browser" text, "context_os" text, "context_device" text, "context_language" text, "context_locale" text, "context_user_agent" text, "context_ip" text, "context_extra" jsonb, "traits" jsonb)',
      'CREATE TABLE IF NOT EXISTS "acct_frozen"."groups" ("message_id" text, "anonymous_id" text, "user_id" text, "session_id" text, "timestamp" timestamptz, "original_timestamp" timestamptz, "sent_at" timestamptz, "received_at" timestamptz, "context_source" text, "context_library_name" text, "context_library_version" text, "context_page_url" text, "context_page_path" text, "context_page_title" text, "context_page_referrer" text, "context_screen_width" integer, "context_screen_height" integer, "context_campaign_source" text, "context_campaign_medium" text, "context_campaign_name" text, "context_campaign_term" text, "context_campaign_content" text, "context_click_ids" jsonb, "context_consent" jsonb, "context_browser" text, "context_os" text, "context_device" text, "context_language" text, "context_locale" text, "context_user_agent" text, "context_ip" text, "context_extra" jsonb, "group_id" text PRIMARY KEY, "traits" jsonb)',
      'CREATE TABLE IF NOT EXISTS "acct_frozen"."aliases" ("message_id" text PRIMARY KEY, "anonymous_id" text, "user_id" text, "session_id" text, "timestamp" timestamptz, "original_timestamp" timestamptz, "sent_at" timestamptz, "received_at" timestamptz, "context_source" text, "context_library_name" text, "context_library_version" text, "context_page_url" text, "context_page_path" text, "context_page_title" text, "context_page_referrer" text, "context_screen_width" integer, "context_screen_height" integer, "context_campaign_source" text, "context_campaign_medium" text, "context_campaign_name" text, "context_campaign_term" text, "context_campaign_content" text, "context_click_ids" jsonb, "context_consent" jsonb, "context_browser" text, "context_os" text, "context_device" text, "context_language" text, "context_locale" text, "context_user_agent" text, "context_ip" text, "context_extra" jsonb, "previous_id" text)',
      'CREATE INDEX IF NOT EXISTS events_timestamp ON "acct_frozen".events (timestamp)',
      'CREATE INDEX IF NOT EXISTS events_user ON "acct_frozen".events (user_id)',
    ]);
  });

  it('has one step per version, in order', () => {
    expect(warehouseMigrations.map((m) => m.version)).toEqual([1, 2, 3, 4]);
  });

  it('step 3 indexes the columns a regulation erases a subject by', () => {
    expect(warehouseMigrations[2]?.statements('acct_3')).toEqual([
      'CREATE INDEX IF NOT EXISTS events_anonymous ON "acct_3".events (anonymous_id)',
      'CREATE INDEX IF NOT EXISTS users_anonymous ON "acct_3".users (anonymous_id)',
      'CREATE INDEX IF NOT EXISTS groups_user ON "acct_3".groups (user_id)',
      'CREATE INDEX IF NOT EXISTS groups_anonymous ON "acct_3".groups (anonymous_id)',
      'CREATE INDEX IF NOT EXISTS aliases_user ON "acct_3".aliases (user_id)',
      'CREATE INDEX IF NOT EXISTS aliases_anonymous ON "acct_3".aliases (anonymous_id)',
      'CREATE INDEX IF NOT EXISTS aliases_previous ON "acct_3".aliases (previous_id)',
    ]);
  });

  it("step 2 adds the orders of users' and groups' values, compared byte by byte", () => {
    expect(warehouseMigrations[1]?.statements('acct_2')).toEqual([
      'ALTER TABLE "acct_2"."users" ADD COLUMN IF NOT EXISTS "_event_order" text COLLATE "C", ADD COLUMN IF NOT EXISTS "_trait_orders" jsonb',
      'ALTER TABLE "acct_2"."groups" ADD COLUMN IF NOT EXISTS "_event_order" text COLLATE "C", ADD COLUMN IF NOT EXISTS "_trait_orders" jsonb',
    ]);
  });

  it('quotes identifiers, doubling embedded quotes', () => {
    expect(quoteIdent('events')).toBe('"events"');
    expect(quoteIdent('a"b""c')).toBe('"a""b""""c"');
    expect(quoteIdent('x"; DROP SCHEMA public; --')).toBe('"x""; DROP SCHEMA public; --"');
  });

  it('keys events and aliases by message, users and groups by their id', () => {
    expect(conflictKey).toEqual({
      events: 'message_id',
      aliases: 'message_id',
      users: 'user_id',
      groups: 'group_id',
    });
  });

  it('adds columns with one ALTER TABLE that is harmless when run again', () => {
    expect(
      addColumns('acct_1', 'events', [
        ['context_timezone', 'text'],
        ['odd"name', 'numeric'],
      ]),
    ).toBe(
      'ALTER TABLE "acct_1"."events" ADD COLUMN IF NOT EXISTS "context_timezone" text, ADD COLUMN IF NOT EXISTS "odd""name" numeric',
    );
  });
});
