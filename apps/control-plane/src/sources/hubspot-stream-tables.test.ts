import { Client } from 'pg';
import { connectorFor } from '@pipeline/catalog';
import type { StreamPage } from '@pipeline/connectors';
import { hubspotObjects, startHubSpotLookAlike, type HubSpotLookAlike } from '@pipeline/connectors/testing';
import { StreamTableWriter } from '@pipeline/destinations';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { streamTable } from './source-sync-executor';

// A HubSpot source's records, read through the connector from the HubSpot look-alike, loaded
// with the warehouse writer the sync engine uses: the record shape becomes typed columns and
// incremental reads upsert, never duplicate.
describe('HubSpot streams into warehouse tables (real PostgreSQL, HubSpot look-alike)', () => {
  let db: ScratchDatabase;
  let client: Client;
  let writer: StreamTableWriter;
  let hubspot: HubSpotLookAlike;
  const schema = 'account_hubspot';
  const t0 = new Date('2026-06-01T08:00:00.000Z');

  beforeAll(async () => {
    db = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'hubspot stream tables',
    );
    client = new Client({ connectionString: db.url });
    await client.connect();
    writer = new StreamTableWriter(db.url);
    hubspot = await startHubSpotLookAlike();
  });
  afterAll(async () => {
    await hubspot.close();
    await writer.close();
    await client.end();
    await db.drop();
  });

  /** What the sync engine does with one stream: write each page, keep the last cursor. */
  async function sync(stream: string, cursor: string | null) {
    const connector = connectorFor(
      { appType: 'hubspot', credentials: { accessToken: hubspot.secret }, config: {} },
      { baseUrls: { hubspot: hubspot.url }, minDelayMs: 5 },
    )!;
    const spec = connector.streams.find((s) => s.name === stream)!;
    let saved = cursor;
    let written = 0;
    for await (const page of connector.read(stream, { cursor }) as AsyncIterable<StreamPage>) {
      written += (await writer.write(schema, streamTable('hubspot', stream), spec.primaryKey, page.records))
        .written;
      if (page.cursor !== null) saved = page.cursor;
    }
    return { cursor: saved, written };
  }

  it('loads contacts as typed columns, then upserts what changed since the cursor', async () => {
    hubspot.data.set('contacts', hubspotObjects('contacts', 230, t0, { spreadMs: 1000 }));
    const full = await sync('contacts', null);
    expect(full).toEqual({ cursor: new Date(t0.getTime() + 229_000).toISOString(), written: 230 });

    const columns = await client.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'hubspot_contacts' ORDER BY column_name`,
      [schema],
    );
    expect(columns.rows.map((r) => `${r.column_name}:${r.data_type}`)).toEqual([
      '_raw:jsonb',
      '_synced_at:timestamp with time zone',
      'archived:boolean',
      'created_at:text',
      'createdate:text',
      'email:text',
      'firstname:text',
      'hs_object_id:text',
      'id:text',
      'lastmodifieddate:text',
      'updated_at:text',
    ]);

    // Two contacts change after the cursor; one of them also at the cursor's instant.
    const later = new Date(t0.getTime() + 500_000).toISOString();
    const contacts = hubspot.data.get('contacts')!;
    for (const id of ['5', '229']) {
      const contact = contacts.find((c) => c.id === id)!;
      contact.updatedAt = later;
      contact.properties.lastmodifieddate = later;
      contact.properties.firstname = `Renamed ${id}`;
    }
    const incremental = await sync('contacts', full.cursor);
    // GTE the cursor: the contact last modified at the cursor (230) comes again, and the two.
    expect(incremental).toEqual({ cursor: later, written: 3 });
    const rows = await client.query<{ id: string; firstname: string; updated_at: string; archived: boolean }>(
      `SELECT id, firstname, updated_at, archived FROM ${schema}.hubspot_contacts WHERE id IN ('5', '229', '230') ORDER BY id::int`,
    );
    expect(rows.rows).toEqual([
      { id: '5', firstname: 'Renamed 5', updated_at: later, archived: false },
      { id: '229', firstname: 'Renamed 229', updated_at: later, archived: false },
      {
        id: '230',
        firstname: 'First 230',
        updated_at: new Date(t0.getTime() + 229_000).toISOString(),
        archived: false,
      },
    ]);
    const count = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.hubspot_contacts`);
    expect(count.rows[0]?.n).toBe('230');
  });

  it('loads companies and deals into their own tables', async () => {
    hubspot.data.set('companies', hubspotObjects('companies', 3, t0));
    hubspot.data.set('deals', hubspotObjects('deals', 2, t0));
    expect(await sync('companies', null)).toMatchObject({ written: 3 });
    expect(await sync('deals', null)).toMatchObject({ written: 2 });
    const deals = await client.query<{ id: string; dealname: string; amount: string }>(
      `SELECT id, dealname, amount FROM ${schema}.hubspot_deals ORDER BY id`,
    );
    expect(deals.rows).toEqual([
      { id: '1', dealname: 'Deal 1', amount: '100' },
      { id: '2', dealname: 'Deal 2', amount: '200' },
    ]);
  });
});
