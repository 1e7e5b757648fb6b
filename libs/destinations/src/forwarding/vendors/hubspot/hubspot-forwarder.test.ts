import { HubSpotForwarder } from './hubspot-forwarder';
import fc from 'fast-check';
import { DeliveryFailure } from '../../delivery-failure';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import {
  HUBSPOT_MAX_VALUE_CHARS,
  hubspotInputOf,
  hubspotPropertiesOf,
  hubspotPropertyName,
  hubspotValue,
} from './hubspot-mapping';
import { oneOfEachType, rawSampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';
import { hubspotLookAlikeProperties } from './hubspot-look-alike';

const identify = (traits: Record<string, unknown>) =>
  rawSampleEvent({ type: 'identify', userId: 'user-42', traits });

async function failureOf(promise: Promise<unknown>): Promise<DeliveryFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DeliveryFailure) return error;
    throw error;
  }
  throw new Error('expected a DeliveryFailure');
}

/** The look-alike's writable properties and types, as the forwarder reads them. */
const writableTypes = new Map(
  Object.entries(hubspotLookAlikeProperties)
    .filter(([, p]) => !p.readOnly)
    .map(([name, p]) => [name, p.type]),
);

describe('HubSpot forwarder (CRM v3 contacts batch upsert look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('hubspot');
    forwarder = new HubSpotForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('upserts identify traits as contact properties by email; other calls and identifies without email are skipped', async () => {
    const events = [
      ...Object.values(oneOfEachType()),
      identify({
        email: '  Grace.Hopper@Example.COM ',
        firstName: 'Grace',
        last_name: 'Hopper',
        title: 'Rear Admiral',
        planType: 'enterprise',
        seats: 12,
        isTrial: false,
        renewalDate: '2027-01-31T15:00:00.000Z',
        favoriteColor: ['blue', 'green'],
        address: { street: '1 Navy Way', city: 'Arlington', postalCode: '22201', country: 'US' },
        hs_object_id: '999',
        notAProperty: 'dropped',
        nothing: null,
      }),
      identify({ firstName: 'No Email' }),
      identify({ email: 'not-an-email' }),
    ];
    const outcome = await forwarder.send(lookAlikeDestination(server), events);

    expect(outcome.sent).toBe(2);
    expect(outcome.requests).toBe(2);
    expect(outcome.skipped.map((s) => s.reason.split(':')[0])).toEqual([
      'identify_only',
      'identify_only',
      'identify_only',
      'identify_only',
      'identify_only',
      'no_email',
      'no_email',
    ]);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /crm/v3/properties/contacts',
      'POST /crm/v3/objects/contacts/batch/upsert',
    ]);
    expect(server.requests[1]?.headers.authorization).toBe('Bearer pat-na1-look-alike');
    expect(JSON.parse(server.requests[1]!.body)).toEqual({
      inputs: [
        {
          idProperty: 'email',
          id: 'ada@example.com',
          properties: { firstname: 'Ada', email: 'ada@example.com' },
        },
        {
          idProperty: 'email',
          id: 'grace.hopper@example.com',
          properties: {
            firstname: 'Grace',
            lastname: 'Hopper',
            jobtitle: 'Rear Admiral',
            plan_type: 'enterprise',
            seats: '12',
            is_trial: 'false',
            renewal_date: '2027-01-31',
            favorite_color: 'blue;green',
            address: '1 Navy Way',
            city: 'Arlington',
            zip: '22201',
            country: 'US',
            email: 'grace.hopper@example.com',
          },
        },
      ],
    });
    expect(server.accepted).toHaveLength(2);
  });

  it('merges identifies of one email in a request (HubSpot refuses an id twice), later traits winning', async () => {
    const events = [
      identify({ email: 'ada@example.com', firstName: 'Ada', company: 'Analytical Engines' }),
      identify({ email: 'ADA@example.com', firstName: 'Augusta' }),
    ];
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome).toEqual({ sent: 2, requests: 2, skipped: [] });
    expect(server.accepted.map((a) => a.item)).toEqual([
      {
        idProperty: 'email',
        id: 'ada@example.com',
        properties: { firstname: 'Augusta', company: 'Analytical Engines', email: 'ada@example.com' },
      },
    ]);
  });

  it('sends at most 100 inputs per request and reads the property list once per 5 minutes', async () => {
    const events = Array.from({ length: 250 }, (_, i) => identify({ email: `c${i}@example.com`, seats: i }));
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome).toEqual({ sent: 250, requests: 4, skipped: [] });
    const inputs = server.requests
      .slice(1)
      .map((r) => (JSON.parse(r.body) as { inputs: unknown[] }).inputs.length);
    expect(inputs).toEqual([100, 100, 50]);
    await forwarder.send(lookAlikeDestination(server), [identify({ email: 'again@example.com' })]);
    expect(server.requests.filter((r) => r.method === 'GET')).toHaveLength(1);
  });

  it('a 207 names the contacts HubSpot did not take: only those are undelivered', async () => {
    server.rejectItems((item) => item.id === 'bad@example.com', 'Email address bad@example.com is invalid');
    const events = [
      identify({ email: 'good@example.com' }),
      identify({ email: 'bad@example.com' }),
      identify({ email: 'fine@example.com' }),
    ];
    const failure = await failureOf(forwarder.send(lookAlikeDestination(server), events));
    expect(failure).toMatchObject({ retryable: false, sent: 2, requests: 2, status: 207 });
    expect(failure.undelivered).toEqual([
      { event: events[1], reason: 'rejected: VALIDATION_ERROR', retryable: false },
    ]);
    expect(server.accepted.map((a) => a.item.id)).toEqual(['good@example.com', 'fine@example.com']);
  });

  it('a 400 VALIDATION_ERROR fails the whole batch without naming the contact: halving finds it', async () => {
    const events = Array.from({ length: 8 }, (_, i) => identify({ email: `p${i}@example.com` }));
    const invalid = {
      status: 400,
      body: {
        status: 'error',
        category: 'VALIDATION_ERROR',
        message: 'Property values were not valid: [{"isValid":false,"error":"INVALID_OPTION"}]',
      },
    };
    server.passNext(1); // the property list
    server.failNext(invalid); // all 8
    for (let level = 0; level < 3; level += 1) {
      server.passNext(1); // the first half: upserted
      server.failNext(invalid); // the half holding the invalid contact
    }
    const failure = await failureOf(forwarder.send(lookAlikeDestination(server), events));
    expect(failure).toMatchObject({ retryable: false, status: 400, sent: 7, requests: 1 + 1 + 6 });
    expect(failure.undelivered).toEqual([{ event: events[7], reason: 'http_400', retryable: false }]);
    expect(server.accepted.map((a) => a.item.id)).toEqual(
      [0, 1, 2, 3, 4, 5, 6].map((i) => `p${i}@example.com`),
    );
  });

  it('429 without Retry-After: retryable after HubSpot’s ten-second window', async () => {
    await forwarder.send(lookAlikeDestination(server), [identify({ email: 'warm@example.com' })]);
    server.failNext({ status: 429 });
    const failure = await failureOf(
      forwarder.send(lookAlikeDestination(server), [identify({ email: 'a@example.com' })]),
    );
    expect(failure).toMatchObject({ retryable: true, status: 429, retryAfterMs: 10_000, sent: 0 });
  });

  it('a failed property lookup stops the send: 401 permanently, 503 retryably', async () => {
    const wrong = lookAlikeDestination(server, { credentials: { accessToken: 'pat-wrong' } });
    const denied = await failureOf(forwarder.send(wrong, [identify({ email: 'a@example.com' })]));
    expect(denied).toMatchObject({ retryable: false, status: 401, requests: 1, reason: 'hubspot: http_401' });
    server.failNext({ status: 503 });
    const down = await failureOf(
      forwarder.send(lookAlikeDestination(server), [identify({ email: 'a@example.com' })]),
    );
    expect(down).toMatchObject({ retryable: true, status: 503, requests: 1 });
    expect(server.accepted).toHaveLength(0);
  });

  it('maps trait names to HubSpot property names (documented table)', () => {
    const table: [string, string | undefined][] = [
      ['firstName', 'firstname'],
      ['first_name', 'firstname'],
      ['lastName', 'lastname'],
      ['title', 'jobtitle'],
      ['postalCode', 'zip'],
      ['planType', 'plan_type'],
      ['Plan Type', 'plan_type'],
      ['plan-type', 'plan_type'],
      ['ÉtéSpécial', 'ete_special'],
      ['Größe', 'gro_e'],
      ['HTMLColor', 'htmlcolor'],
      ['__proto__', 'proto'],
      ['1st', undefined],
      ['😀', undefined],
      ['a😀b', 'a_b'],
    ];
    expect(table.map(([trait]) => [trait, hubspotPropertyName(trait)])).toEqual(table);
    expect(hubspotValue(Number.NaN)).toBeUndefined();
    expect(hubspotValue({ nested: true })).toBe('{"nested":true}');
    expect(hubspotValue('x'.repeat(HUBSPOT_MAX_VALUE_CHARS + 1))).toBeUndefined();
  });

  it('property names are always [a-z][a-z0-9_]* and mapping them again keeps them', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (trait) => {
        const name = hubspotPropertyName(trait);
        if (name === undefined) return;
        expect(name).toMatch(/^[a-z][a-z0-9_]*$/);
        expect(hubspotPropertyName(name)).toBe(name);
      }),
      { numRuns: 500 },
    );
  });

  it('whatever traits an identify carries, the look-alike takes what is sent, with the values mapped', async () => {
    const known = Object.keys(hubspotLookAlikeProperties);
    const traitName = fc.oneof(
      fc.constantFrom(...known, 'firstName', 'lastName', 'planType', 'isTrial', 'renewalDate', '__proto__'),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
    );
    const traitValue = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 30 }),
      fc.double(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ unit: 'grapheme', maxLength: 5 }), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 2 }),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    );
    const local = fc.stringMatching(/^[a-zA-Z0-9._%+-]{1,20}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(local, fc.dictionary(traitName, traitValue, { maxKeys: 8 })), {
          minLength: 1,
          maxLength: 5,
        }),
        async (people) => {
          server.requests.length = 0;
          server.accepted.length = 0;
          const events = people.map(([user, traits], i) =>
            identify({ ...traits, email: `${user}.${i}@example.com` }),
          );
          const outcome = await forwarder.send(lookAlikeDestination(server), events);
          expect(outcome.sent).toBe(events.length);
          expect(server.requests.length).toBeGreaterThan(0);
          expect(server.requests.every((r) => r.status === 200)).toBe(true);
          const expected = people.map(([user, traits], i) => {
            const email = `${user}.${i}@example.com`.toLowerCase();
            return hubspotInputOf(email, hubspotPropertiesOf({ ...traits, email }), writableTypes);
          });
          expect(server.accepted.map((a) => a.item)).toEqual(expected);
          for (const { item } of server.accepted) {
            for (const [name, value] of Object.entries(item.properties as Record<string, string>)) {
              expect(writableTypes.has(name)).toBe(true);
              expect(typeof value).toBe('string');
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
