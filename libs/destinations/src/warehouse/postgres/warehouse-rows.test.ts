import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import {
  eventLimits,
  normalizeEvent,
  validateEvent,
  type EventDialect,
  type ReceiptContext,
} from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { eventOrderOf } from '../event-order';
import { WarehouseWriter } from './warehouse-writer';

// Each event type through the door's validator, the normalizer and the real writer into
// PostgreSQL, and its stored row compared with every column's value: a lost page type, dropped
// properties or traits, or `{}` where NULL belongs all fail here.

const receipt: ReceiptContext = {
  receivedAt: new Date('2026-03-01T12:00:00.000Z'),
  ip: '198.51.100.7',
  userAgent: 'Server-Seen/1.0',
};

/** Every typed context key, and one without a column (it goes to context_extra). */
const fullContext = {
  source: 'web',
  library: { name: 'pipeline-web', version: '1.2.3' },
  session: { id: 'session-in-context' },
  page: {
    url: 'https://shop.example/p?q=1',
    path: '/p',
    title: 'Product',
    referrer: 'https://search.example/',
  },
  screen: { width: 1440, height: 900 },
  campaign: {
    utm_source: 'news',
    utm_medium: 'email',
    utm_campaign: 'spring',
    utm_term: 'shoes',
    utm_content: 'a',
  },
  clickId: { gclid: 'g-1' },
  consent: { analytics: true, marketing: false },
  browser: 'Firefox',
  os: 'Linux',
  device: 'desktop',
  language: 'de',
  locale: 'de-DE',
  userAgent: 'Client-Claimed/2.0',
  experiment: { arm: 'b' },
};

/** The columns fullContext fills, with a client clock 55 minutes behind (sentAt 5 s after the event). */
const fullCommon = (messageId: string) => ({
  message_id: messageId,
  anonymous_id: 'anon-1',
  session_id: 'session-in-context',
  timestamp: new Date('2026-03-01T11:59:55.000Z'),
  original_timestamp: new Date('2026-03-01T11:05:00.000Z'),
  sent_at: new Date('2026-03-01T11:05:05.000Z'),
  received_at: receipt.receivedAt,
  context_source: 'web',
  context_library_name: 'pipeline-web',
  context_library_version: '1.2.3',
  context_page_url: 'https://shop.example/p?q=1',
  context_page_path: '/p',
  context_page_title: 'Product',
  context_page_referrer: 'https://search.example/',
  context_screen_width: 1440,
  context_screen_height: 900,
  context_campaign_source: 'news',
  context_campaign_medium: 'email',
  context_campaign_name: 'spring',
  context_campaign_term: 'shoes',
  context_campaign_content: 'a',
  context_click_ids: { gclid: 'g-1' },
  context_consent: { analytics: true, marketing: false },
  context_browser: 'Firefox',
  context_os: 'Linux',
  context_device: 'desktop',
  context_language: 'de',
  context_locale: 'de-DE',
  // What reached the server wins over what the client claims.
  context_user_agent: 'Server-Seen/1.0',
  context_ip: '198.51.100.7',
  context_extra: { experiment: { arm: 'b' } },
  plan_violations: null,
});

/** The columns of an event whose context has only empty objects and no session. */
const bareCommon = (messageId: string) => ({
  message_id: messageId,
  anonymous_id: 'anon-2',
  session_id: null,
  timestamp: new Date('2026-03-01T11:00:00.000Z'),
  original_timestamp: new Date('2026-03-01T11:00:00.000Z'),
  sent_at: null,
  received_at: receipt.receivedAt,
  context_source: null,
  context_library_name: null,
  context_library_version: null,
  context_page_url: null,
  context_page_path: null,
  context_page_title: null,
  context_page_referrer: null,
  context_screen_width: null,
  context_screen_height: null,
  context_campaign_source: null,
  context_campaign_medium: null,
  context_campaign_name: null,
  context_campaign_term: null,
  context_campaign_content: null,
  // Empty objects are no information: NULL, not {}.
  context_click_ids: null,
  context_consent: null,
  context_browser: null,
  context_os: null,
  context_device: null,
  context_language: null,
  context_locale: null,
  context_user_agent: 'Server-Seen/1.0',
  context_ip: '198.51.100.7',
  context_extra: null,
  plan_violations: null,
});

const full = <T extends { type: string }>(fields: T) => ({
  messageId: randomUUID(),
  timestamp: '2026-03-01T11:05:00.000Z',
  sentAt: '2026-03-01T11:05:05.000Z',
  anonymousId: 'anon-1',
  context: fullContext,
  ...fields,
});
const bare = <T extends { type: string }>(fields: T) => ({
  messageId: randomUUID(),
  timestamp: '2026-03-01T11:00:00.000Z',
  anonymousId: 'anon-2',
  context: { clickId: {}, consent: {}, page: {} },
  ...fields,
});

describe('warehouse rows, value by value (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let writer: WarehouseWriter;
  let client: Client;
  const schema = 'acct_rows';

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'warehouse rows');
    writer = new WarehouseWriter(db.url);
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await writer.close();
    await db.drop();
  });

  /**
   * Validates `event` as the door does, writes its row, and reads back every column of it but
   * the orders users and groups keep of their values (warehouse-event-order.test.ts).
   */
  async function stored(
    event: { messageId: string; type: string },
    dialect: EventDialect = 'collect',
  ): Promise<{ table: string; row: Record<string, unknown> }> {
    const result = validateEvent(event, Infinity, dialect);
    if (!result.valid) throw new Error(`refused: ${JSON.stringify(result.errors)}`);
    const row = normalizeEvent(result.event, receipt);
    expect(await writer.write(schema, [row])).toEqual({ written: 1, duplicates: 0 });
    const { rows } = await client.query(`SELECT * FROM ${schema}.${row.table} WHERE message_id = $1`, [
      event.messageId,
    ]);
    expect(rows).toHaveLength(1);
    const { _event_order: eventOrder, _trait_orders: traitOrders, ...columns } = rows[0];
    if (row.table === 'users' || row.table === 'groups') {
      expect(eventOrder).toBe(eventOrderOf(row.row));
      expect(traitOrders).toEqual(
        Object.fromEntries(Object.keys(row.row.traits as object).map((k) => [k, eventOrderOf(row.row)])),
      );
    }
    return { table: row.table, row: columns };
  }

  describe('with every context field', () => {
    it('track', async () => {
      const event = full({
        type: 'track',
        event: 'Order Completed',
        userId: 'u-1',
        properties: { total: 9.5 },
      });
      expect(await stored(event)).toEqual({
        table: 'events',
        row: {
          ...fullCommon(event.messageId),
          user_id: 'u-1',
          type: 'track',
          event: 'Order Completed',
          name: null,
          properties: { total: 9.5 },
        },
      });
    });

    it('page', async () => {
      const event = full({ type: 'page', name: 'Product', properties: { sku: 'A-1' } });
      expect(await stored(event)).toEqual({
        table: 'events',
        row: {
          ...fullCommon(event.messageId),
          user_id: null,
          type: 'page',
          event: null,
          name: 'Product',
          properties: { sku: 'A-1' },
        },
      });
    });

    it('screen (Segment dialect)', async () => {
      const event = full({ type: 'screen', name: 'Cart', properties: { items: 2 } });
      expect(await stored(event, 'segment')).toEqual({
        table: 'events',
        row: {
          ...fullCommon(event.messageId),
          user_id: null,
          type: 'screen',
          event: null,
          name: 'Cart',
          properties: { items: 2 },
        },
      });
    });

    it('identify', async () => {
      const event = full({ type: 'identify', userId: 'u-identify', traits: { plan: 'pro', seats: 3 } });
      expect(await stored(event)).toEqual({
        table: 'users',
        row: { ...fullCommon(event.messageId), user_id: 'u-identify', traits: { plan: 'pro', seats: 3 } },
      });
    });

    it('group', async () => {
      const event = full({ type: 'group', groupId: 'g-full', userId: 'u-2', traits: { name: 'Acme' } });
      expect(await stored(event)).toEqual({
        table: 'groups',
        row: { ...fullCommon(event.messageId), user_id: 'u-2', group_id: 'g-full', traits: { name: 'Acme' } },
      });
    });

    it('alias', async () => {
      const event = full({ type: 'alias', userId: 'u-new', previousId: 'anon-old' });
      expect(await stored(event)).toEqual({
        table: 'aliases',
        row: { ...fullCommon(event.messageId), user_id: 'u-new', previous_id: 'anon-old' },
      });
    });

    it('a top-level sessionId wins over the context session', async () => {
      const event = full({ type: 'track', event: 'Clicked', sessionId: 'session-top' });
      const { row } = await stored(event);
      expect(row.session_id).toBe('session-top');
    });
  });

  describe('with empty context objects, no session, and no properties or traits', () => {
    it('track', async () => {
      const event = bare({ type: 'track', event: 'Clicked' });
      expect(await stored(event)).toEqual({
        table: 'events',
        row: {
          ...bareCommon(event.messageId),
          user_id: null,
          type: 'track',
          event: 'Clicked',
          name: null,
          properties: {},
        },
      });
    });

    it('page', async () => {
      const event = bare({ type: 'page' });
      expect(await stored(event)).toEqual({
        table: 'events',
        row: {
          ...bareCommon(event.messageId),
          user_id: null,
          type: 'page',
          event: null,
          name: null,
          properties: {},
        },
      });
    });

    it('screen (Segment dialect)', async () => {
      const event = bare({ type: 'screen' });
      expect(await stored(event, 'segment')).toEqual({
        table: 'events',
        row: {
          ...bareCommon(event.messageId),
          user_id: null,
          type: 'screen',
          event: null,
          name: null,
          properties: {},
        },
      });
    });

    it('identify', async () => {
      const event = bare({ type: 'identify', userId: 'u-bare' });
      expect(await stored(event)).toEqual({
        table: 'users',
        row: { ...bareCommon(event.messageId), user_id: 'u-bare', traits: {} },
      });
    });

    it('group', async () => {
      const event = bare({ type: 'group', groupId: 'g-bare' });
      expect(await stored(event)).toEqual({
        table: 'groups',
        row: { ...bareCommon(event.messageId), user_id: null, group_id: 'g-bare', traits: {} },
      });
    });

    it('alias', async () => {
      const event = bare({ type: 'alias', userId: 'u-bare-new', previousId: 'anon-2' });
      expect(await stored(event)).toEqual({
        table: 'aliases',
        row: { ...bareCommon(event.messageId), user_id: 'u-bare-new', previous_id: 'anon-2' },
      });
    });

    it('an event without any context', async () => {
      const event = { ...bare({ type: 'track', event: 'No Context' }), context: undefined };
      const { row } = await stored(event);
      expect(row).toEqual({
        ...bareCommon(event.messageId),
        user_id: null,
        type: 'track',
        event: 'No Context',
        name: null,
        properties: {},
      });
    });
  });

  describe('values at the documented limits are stored whole', () => {
    it('200-character ids, a 2,048-character context text and a 32,768-byte event', async () => {
      const id = (c: string) => c.repeat(eventLimits.maxIdLength);
      const url = `https://shop.example/${'u'.repeat(eventLimits.maxContextText - 'https://shop.example/'.length)}`;
      const event: Record<string, unknown> & { messageId: string; type: string } = {
        type: 'group',
        messageId: 'm'.repeat(eventLimits.maxMessageIdLength),
        timestamp: '2026-03-01T11:00:00.000Z',
        anonymousId: id('a'),
        userId: id('u'),
        sessionId: id('s'),
        groupId: id('g'),
        context: { page: { url } },
        traits: { pad: '' },
      };
      // Padded with two-byte characters to exactly the limit: bytes, not characters, count.
      const room = eventLimits.maxEventBytes - Buffer.byteLength(JSON.stringify(event), 'utf8');
      const pad = 'é'.repeat(Math.floor(room / 2)) + 'x'.repeat(room % 2);
      event.traits = { pad };
      expect(Buffer.byteLength(JSON.stringify(event), 'utf8')).toBe(eventLimits.maxEventBytes);

      const { row } = await stored(event);
      expect(row).toMatchObject({
        message_id: 'm'.repeat(100),
        anonymous_id: id('a'),
        user_id: id('u'),
        session_id: id('s'),
        group_id: id('g'),
        context_page_url: url,
        traits: { pad },
      });
      expect((row.context_page_url as string).length).toBe(2048);
      expect((row.group_id as string).length).toBe(200);
    });
  });
});
