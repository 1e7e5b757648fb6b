import type { StreamPage } from '../connector';
import { hubspotObjects, startHubSpotLookAlike, type HubSpotLookAlike } from '../testing/hubspot-look-alike';
import { HubSpotConnector } from './hubspot-connector';

async function readAll(pages: AsyncIterable<StreamPage>) {
  const records: Record<string, unknown>[] = [];
  const cursors: (string | null)[] = [];
  for await (const page of pages) {
    records.push(...page.records);
    cursors.push(page.cursor);
  }
  return { records, cursors, cursor: cursors.at(-1) ?? null };
}

describe('HubSpotConnector against a HubSpot look-alike', () => {
  let hubspot: HubSpotLookAlike;
  const t0 = new Date('2026-05-01T10:00:00.000Z');
  beforeEach(async () => {
    hubspot = await startHubSpotLookAlike();
    hubspot.data.set('contacts', hubspotObjects('contacts', 250, t0, { spreadMs: 1000 }));
    hubspot.data.set('companies', hubspotObjects('companies', 3, t0));
  });
  afterEach(() => hubspot.close());
  const connector = (over: Partial<ConstructorParameters<typeof HubSpotConnector>[0]> = {}) =>
    new HubSpotConnector({ accessToken: hubspot.secret, baseUrl: hubspot.url, minDelayMs: 5, ...over });

  it('reads every page of the list API with after, every property flattened, the cursor at the end', async () => {
    const { records, cursors } = await readAll(connector().read('contacts', { cursor: null }));
    expect(records).toHaveLength(250);
    expect(new Set(records.map((r) => r.id)).size).toBe(250);
    const last = new Date(t0.getTime() + 249_000).toISOString();
    expect(cursors).toEqual([null, null, last]);
    expect(records[0]).toEqual({
      email: 'contact1@example.com',
      firstname: 'First 1',
      lastname: null,
      createdate: '2026-04-30T10:00:00.000Z',
      lastmodifieddate: t0.toISOString(),
      hs_object_id: '1',
      id: '1',
      created_at: '2026-04-30T10:00:00.000Z',
      updated_at: t0.toISOString(),
      archived: false,
    });
    const paths = hubspot.requests.map((r) => decodeURIComponent(r.path));
    expect(paths[0]).toBe('/crm/v3/properties/contacts');
    expect(paths[1]).toBe(
      '/crm/v3/objects/contacts?limit=100&properties=email,firstname,lastname,createdate,lastmodifieddate,hs_object_id&archived=false',
    );
    expect(paths[2]).toMatch(/&after=101$/);
    expect(paths[3]).toMatch(/&after=201$/);
  });

  it('reads incrementally with the search API: lastmodifieddate GTE the cursor, ascending, cursor per page', async () => {
    const cursor = new Date(t0.getTime() + 200_000).toISOString();
    const { records, cursors } = await readAll(
      connector({ searchPageSize: 20 }).read('contacts', { cursor }),
    );
    expect(records.map((r) => r.id)).toEqual(Array.from({ length: 50 }, (_, i) => String(201 + i)));
    expect(cursors).toEqual([
      new Date(t0.getTime() + 219_000).toISOString(),
      new Date(t0.getTime() + 239_000).toISOString(),
      new Date(t0.getTime() + 249_000).toISOString(),
    ]);
    const search = hubspot.requests.filter((r) => r.method === 'POST');
    expect(search[0]?.path).toBe('/crm/v3/objects/contacts/search');
    expect(search[0]?.body).toEqual({
      filterGroups: [
        {
          filters: [
            { propertyName: 'lastmodifieddate', operator: 'GTE', value: String(t0.getTime() + 200_000) },
          ],
        },
      ],
      sorts: [{ propertyName: 'lastmodifieddate', direction: 'ASCENDING' }],
      properties: ['email', 'firstname', 'lastname', 'createdate', 'lastmodifieddate', 'hs_object_id'],
      limit: 20,
    });
    expect(search.map((r) => r.body?.after)).toEqual([undefined, '20', '40']);
  });

  it('reads deals like the other objects, on hs_lastmodifieddate', async () => {
    hubspot.data.set('deals', hubspotObjects('deals', 2, t0));
    const { records } = await readAll(
      connector().read('deals', { cursor: new Date(t0.getTime() - 1).toISOString() }),
    );
    expect(records.map((r) => [r.id, r.dealname, r.amount])).toEqual([
      ['1', 'Deal 1', '100'],
      ['2', 'Deal 2', '200'],
    ]);
    const body = hubspot.requests.at(-1)?.body as { sorts: unknown[] };
    expect(body.sorts).toEqual([{ propertyName: 'hs_lastmodifieddate', direction: 'ASCENDING' }]);
  });

  it('paces search requests at most five a second', async () => {
    // A clock that only the pacing's waits move: each wait is the whole interval.
    let clock = 1_000_000;
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      clock += ms;
    };
    const { records } = await readAll(
      connector({ searchPageSize: 50, now: () => clock, sleep }).read('contacts', {
        cursor: t0.toISOString(),
      }),
    );
    expect(records).toHaveLength(250);
    // 5 search pages: 4 waits of 200 ms.
    expect(waits).toEqual([200, 200, 200, 200]);
  });

  it('filters companies on hs_lastmodifieddate, the rolling window and the start date applied', async () => {
    hubspot.data
      .get('companies')!
      .push(...hubspotObjects('companies', 2, new Date(t0.getTime() + 3_600_000), { from: 10 }));
    const rolled = await readAll(
      connector().read('companies', {
        cursor: new Date(t0.getTime() + 3_600_000).toISOString(),
        rollingPeriodHours: 1,
      }),
    );
    expect(rolled.records.map((r) => r.id)).toEqual(['1', '2', '3', '10', '11']);
    const body = hubspot.requests.at(-1)?.body as { filterGroups: { filters: unknown[] }[] };
    expect(body.filterGroups[0]?.filters).toEqual([
      { propertyName: 'hs_lastmodifieddate', operator: 'GTE', value: String(t0.getTime()) },
    ]);
    const bounded = await readAll(
      connector().read('companies', { cursor: null, startDate: new Date(t0.getTime() + 1) }),
    );
    expect(bounded.records.map((r) => r.id)).toEqual(['10', '11']);
    expect(bounded.cursor).toBe(new Date(t0.getTime() + 3_600_000).toISOString());
  });

  it('an account with very many properties is read in full with the search API, not a huge URL', async () => {
    const many = Array.from({ length: 400 }, (_, i) => `custom_property_number_${i}`);
    hubspot.properties.set('companies', [...hubspot.properties.get('companies')!, ...many]);
    const { records, cursor } = await readAll(connector().read('companies', { cursor: null }));
    expect(records.map((r) => r.id)).toEqual(['1', '2', '3']);
    expect(records[0]).toMatchObject({ custom_property_number_0: null, name: 'Company 1' });
    expect(cursor).toBe(t0.toISOString());
    const read = hubspot.requests.at(-1)!;
    expect(read.path).toBe('/crm/v3/objects/companies/search');
    expect((read.body?.filterGroups as { filters: unknown[] }[])[0]?.filters).toEqual([
      { propertyName: 'hs_lastmodifieddate', operator: 'GTE', value: '0' },
    ]);
    expect((read.body?.properties as string[]).length).toBe(405);
  });

  it('restarts the search from the last modified date before the 10,000-result cap', async () => {
    // A window of 50 stands for HubSpot's 10,000; the look-alike enforces the real cap too.
    hubspot.data.set('contacts', hubspotObjects('contacts', 130, t0, { spreadMs: 1000 }));
    const { records } = await readAll(
      connector({ searchPageSize: 20, searchWindow: 50 }).read('contacts', { cursor: t0.toISOString() }),
    );
    // Each restart re-reads the records of the instant it starts from (upserted again).
    expect(new Set(records.map((r) => r.id)).size).toBe(130);
    const search = hubspot.requests.filter((r) => r.method === 'POST').map((r) => r.body!);
    const starts = search
      .filter((b) => b.after === undefined)
      .map((b) => (b.filterGroups as { filters: { value: string }[] }[])[0]!.filters[0]!.value);
    expect(starts).toEqual([t0.getTime(), t0.getTime() + 49_000, t0.getTime() + 98_000].map(String));
    expect(search.every((b) => Number(b.after ?? 0) + Number(b.limit) <= 50)).toBe(true);
  });

  it('pages one instant holding a whole window by hs_object_id, then goes on after it', async () => {
    const same = hubspotObjects('contacts', 120, t0);
    const after = hubspotObjects('contacts', 5, new Date(t0.getTime() + 1000), { from: 500 });
    hubspot.data.set('contacts', [...same, ...after]);
    const { records, cursor } = await readAll(
      connector({ searchPageSize: 20, searchWindow: 50 }).read('contacts', { cursor: t0.toISOString() }),
    );
    expect(new Set(records.map((r) => r.id)).size).toBe(125);
    expect(cursor).toBe(new Date(t0.getTime() + 1000).toISOString());
    const tie = hubspot.requests
      .filter((r) => r.method === 'POST')
      .map((r) => r.body!)
      .filter((b) => (b.sorts as { propertyName: string }[])[0]?.propertyName === 'hs_object_id');
    expect(
      tie.map((b) => [(b.filterGroups as { filters: { value: string }[] }[])[0]!.filters[1]!.value, b.after]),
    ).toEqual([
      ['0', undefined],
      ['0', '20'],
      ['0', '40'],
      ['50', undefined],
      ['50', '20'],
      ['50', '40'],
      ['100', undefined],
    ]);
  });

  it('the 10,000 cap is real: the look-alike refuses a page past it', async () => {
    await expect(
      readAll(
        connector({ searchPageSize: 200, searchWindow: 20_000 }).read('contacts', {
          cursor: t0.toISOString(),
        }),
      ),
    ).resolves.toMatchObject({ records: expect.any(Array) });
    const response = await fetch(`${hubspot.url}/crm/v3/objects/contacts/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hubspot.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limit: 200, after: '9900' }),
    });
    expect(response.status).toBe(400);
  });

  it('retries 429 and 5xx, honouring Retry-After', async () => {
    hubspot.failNext(429, 1, '1');
    hubspot.failNext(502, 1);
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
    };
    const { records } = await readAll(connector({ sleep }).read('companies', { cursor: null }));
    expect(records).toHaveLength(3);
    expect(waits).toEqual([1000]);
    expect(hubspot.requests.map((r) => r.status)).toEqual([429, 502, 200, 200]);
    hubspot.failNext(503, 5);
    await expect(
      readAll(connector({ attempts: 3 }).read('companies', { cursor: null })),
    ).rejects.toMatchObject({
      code: 'vendor_unavailable',
      retryable: true,
      status: 503,
    });
  });

  it('fails permanently on a bad token (never retried) and on an unknown stream', async () => {
    const bad = connector({ accessToken: 'pat-wrong' });
    await expect(bad.check()).rejects.toMatchObject({
      code: 'invalid_credentials',
      retryable: false,
      status: 401,
    });
    await expect(readAll(bad.read('contacts', { cursor: null }))).rejects.toMatchObject({
      code: 'invalid_credentials',
    });
    expect(hubspot.requests.filter((r) => r.status === 401)).toHaveLength(2);
    await expect(readAll(connector().read('tickets', { cursor: null }))).rejects.toMatchObject({
      code: 'unknown_stream',
    });
    expect(() => new HubSpotConnector({ accessToken: '' })).toThrow(/accessToken is required/);
  });
});
