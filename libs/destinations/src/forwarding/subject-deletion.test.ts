import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { vendorClientOptions, type VendorClientOptions } from './forwarder';
import {
  planDeletionBatches,
  redacted,
  type DeletionBatch,
  type DeletionSubjects,
  type SubjectDeletionClient,
} from './subject-deletion';
import { lookAlikeDestination, startLookAlikeVendor, type LookAlikeServer } from './testing/vendor-server';
import { AmplitudeDeletionClient } from './vendors/amplitude/amplitude-deletion';
import { BrazeDeletionClient } from './vendors/braze/braze-deletion';
import { CustomerIoDeletionClient } from './vendors/customer-io/customer-io-deletion';
import { HubSpotDeletionClient } from './vendors/hubspot/hubspot-deletion';
import { MixpanelDeletionClient } from './vendors/mixpanel/mixpanel-deletion';
import { OneSignalDeletionClient } from './vendors/onesignal/onesignal-deletion';
import { WebhookDeletionClient } from './vendors/webhook/webhook-deletion';

type Vendor = 'amplitude' | 'mixpanel' | 'braze' | 'customer_io' | 'hubspot' | 'onesignal' | 'webhook';

interface ClientCase {
  vendor: Vendor;
  make: (client: VendorClientOptions) => SubjectDeletionClient;
  /** The vendor's most ids per request, and which of the subjects' ids it deletes. */
  max: number;
  kinds: DeletionBatch['idKind'][];
  /** The credentials the vendor needs for deletion. */
  needs: string[];
}

const cases: ClientCase[] = [
  {
    vendor: 'amplitude',
    make: (c) => new AmplitudeDeletionClient(c),
    max: 100,
    kinds: ['user_id'],
    needs: ['apiKey', 'secretKey'],
  },
  {
    vendor: 'mixpanel',
    make: (c) => new MixpanelDeletionClient(c),
    max: 1999,
    kinds: ['user_id', 'anonymous_id'],
    needs: ['gdprToken', 'projectToken'],
  },
  {
    vendor: 'braze',
    make: (c) => new BrazeDeletionClient(c),
    max: 50,
    kinds: ['user_id'],
    needs: ['apiKey'],
  },
  {
    vendor: 'customer_io',
    make: (c) => new CustomerIoDeletionClient(c),
    max: 1,
    kinds: ['user_id'],
    needs: ['siteId', 'apiKey'],
  },
  {
    vendor: 'hubspot',
    make: (c) => new HubSpotDeletionClient(c),
    max: 1,
    kinds: ['email'],
    needs: ['accessToken'],
  },
  {
    vendor: 'onesignal',
    make: (c) => new OneSignalDeletionClient(c),
    max: 1,
    kinds: ['user_id'],
    needs: ['appId', 'apiKey'],
  },
  {
    vendor: 'webhook',
    make: (c) => new WebhookDeletionClient(c),
    max: 1,
    kinds: ['user_id', 'anonymous_id'],
    needs: ['signingSecret'],
  },
];

const idsOf = (subjects: DeletionSubjects, kind: DeletionBatch['idKind']) =>
  kind === 'user_id' ? subjects.userIds : kind === 'anonymous_id' ? subjects.anonymousIds : subjects.emails;

/** Full Unicode ids (astral planes, lone surrogates, controls), repeats and empty ones among them. */
const unicodeId = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', 'user-1', 'a@b.co', '🧑‍🚀', '\u0000', 'ｕｓｅｒ'),
);
const idList = (maxLength: number) =>
  fc.oneof(
    fc.array(unicodeId, { maxLength: 40 }),
    // Up to 5,000 ids, a regulation's most, many of them distinct.
    fc
      .tuple(fc.integer({ min: 0, max: maxLength }), fc.string({ maxLength: 4 }))
      .map(([size, prefix]) => Array.from({ length: size }, (_, i) => `${prefix}${i % 4_000}`)),
  );
const subjectsArbitrary = fc.record({
  userIds: idList(5_000),
  anonymousIds: idList(5_000),
  emails: idList(5_000),
});

describe('deletion plans (every client)', () => {
  it.each(cases.map((c) => [c.vendor, c] as const))(
    '%s: every id exactly once, none over the maximum, the same batches for the same input',
    (_, { make, max, kinds }) => {
      const client = make(vendorClientOptions({}, 'http://127.0.0.1:1'));
      fc.assert(
        fc.property(subjectsArbitrary, (subjects) => {
          const batches = client.plan(subjects);
          // Plain comparisons: up to 10,000 one-id batches a run, too many for an expect each.
          expect(JSON.stringify(client.plan(subjects))).toBe(JSON.stringify(batches));
          expect(batches.every((b, i) => b.index === i)).toBe(true);
          const oversized = batches.filter(
            (b) => b.ids.length === 0 || b.ids.length > max || !kinds.includes(b.idKind),
          );
          expect(oversized).toEqual([]);
          for (const kind of ['user_id', 'anonymous_id', 'email'] as const) {
            const sent = batches.filter((b) => b.idKind === kind).flatMap((b) => b.ids);
            const wanted = kinds.includes(kind)
              ? [...new Set(idsOf(subjects, kind))].filter((id) => id !== '')
              : [];
            // Exactly once each, in the order given.
            expect(JSON.stringify(sent)).toBe(JSON.stringify(wanted));
          }
        }),
        { numRuns: 60 },
      );
    },
  );

  it('cuts at the maximum and restarts the count per kind', () => {
    const subjects = { userIds: ['a', 'b', 'c', 'a', ''], anonymousIds: ['x'], emails: ['e@x.io'] };
    expect(planDeletionBatches(subjects, ['user_id', 'anonymous_id'], 2)).toEqual([
      { index: 0, idKind: 'user_id', ids: ['a', 'b'] },
      { index: 1, idKind: 'user_id', ids: ['c'] },
      { index: 2, idKind: 'anonymous_id', ids: ['x'] },
    ]);
    expect(planDeletionBatches({ userIds: [], anonymousIds: [], emails: [] }, ['email'], 1)).toEqual([]);
  });

  it('redacts every hidden value, longest first', () => {
    expect(redacted('no user ab or abc here', ['ab', 'abc', ''])).toBe(
      'no user [redacted] or [redacted] here',
    );
  });
});

const sample: DeletionSubjects = {
  userIds: ['user-42'],
  anonymousIds: ['anon-7'],
  emails: ['ada@example.com'],
};

describe.each(cases.map((c) => [c.vendor, c] as const))(
  '%s deletion client, shared behaviour',
  (vendor, spec) => {
    let server: LookAlikeServer;
    let client: SubjectDeletionClient;
    let batch: DeletionBatch;

    beforeEach(async () => {
      server = await startLookAlikeVendor(vendor);
      // A webhook's URL is the tenant's: no base URL, and a test fetch that may reach 127.0.0.1.
      client = spec.make(
        vendor === 'webhook'
          ? vendorClientOptions({ fetch: globalThis.fetch })
          : vendorClientOptions({}, server.url),
      );
      const [first] = client.plan(sample);
      batch = first!;
    });
    afterEach(() => server.close());

    it('is accepted by the look-alike', async () => {
      const outcome = await client.send(lookAlikeDestination(server), batch);
      expect(outcome.status === 'done' || outcome.status === 'forwarded').toBe(true);
      expect(server.requests).toHaveLength(1);
    });

    it('429: retryable, with the wait Retry-After asks for', async () => {
      server.failNext({ status: 429, retryAfter: '7' });
      expect(await client.send(lookAlikeDestination(server), batch)).toEqual({
        status: 'failed',
        code: 'rate_limited',
        message: expect.stringMatching(/^http_429: /),
        retryable: true,
        retryAfterMs: 7000,
      });
    });

    it('5xx: retryable', async () => {
      server.failNext({ status: 503 });
      expect(await client.send(lookAlikeDestination(server), batch)).toMatchObject({
        status: 'failed',
        code: 'vendor_unavailable',
        retryable: true,
      });
    });

    it('a wrong credential: credential_refused, not retried, no secret in the message', async () => {
      const destination = lookAlikeDestination(server);
      destination.credentials = Object.fromEntries(
        Object.entries(destination.credentials).map(([key, value]) =>
          // OneSignal's app id names the app; a wrong key is what its API refuses.
          vendor === 'onesignal' && key === 'appId' ? [key, value] : [key, `wrong-${key}`],
        ),
      );
      const outcome = await client.send(destination, batch);
      expect(outcome).toMatchObject({ status: 'failed', code: 'credential_refused', retryable: false });
      for (const value of Object.values(destination.credentials))
        expect(JSON.stringify(outcome)).not.toContain(String(value));
    });

    it('another refusal: not retried, with the vendor message and without the ids', async () => {
      const id = batch.ids[0]!;
      server.failNext({
        status: 400,
        body: { error: `cannot delete ${id}`, message: `cannot delete ${id}` },
      });
      const outcome = await client.send(lookAlikeDestination(server), batch);
      expect(outcome).toEqual({
        status: 'failed',
        code: 'vendor_refused',
        message: 'http_400: cannot delete [redacted]',
        retryable: false,
      });
    });

    it('no answer: retryable', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const url = `http://127.0.0.1:${port}/hooks/events`;
      const unreachable =
        vendor === 'webhook'
          ? spec.make(vendorClientOptions({ fetch: globalThis.fetch }))
          : spec.make(vendorClientOptions({}, `http://127.0.0.1:${port}`));
      const destination = lookAlikeDestination(server, vendor === 'webhook' ? { appConfig: { url } } : {});
      expect(await unreachable.send(destination, batch)).toMatchObject({
        status: 'failed',
        code: 'network',
        retryable: true,
      });
    });

    it.each(spec.needs)('without credentials.%s: credential_missing, nothing sent', async (field) => {
      const destination = lookAlikeDestination(server);
      const { [field]: _dropped, ...rest } = destination.credentials;
      destination.credentials = rest;
      expect(client.missingCredential(destination)).toBe(field);
      expect(await client.send(destination, batch)).toEqual({
        status: 'failed',
        code: 'credential_missing',
        message: `credentials.${field} is required to delete at this vendor`,
        retryable: false,
      });
      expect(client.missingCredential(lookAlikeDestination(server))).toBeNull();
      expect(server.requests).toHaveLength(0);
    });

    it('refuses a batch over its maximum, of a kind it does not take, or empty: nothing sent', async () => {
      const destination = lookAlikeDestination(server);
      const over = { ...batch, ids: Array.from({ length: spec.max + 1 }, (_, i) => `id-${i}`) };
      const otherKind = (['user_id', 'anonymous_id', 'email'] as const).find((k) => !spec.kinds.includes(k));
      const outcomes = [
        await client.send(destination, over),
        await client.send(destination, { ...batch, ids: [] }),
        await client.send(destination, { ...batch, ids: [''] }),
        ...(otherKind ? [await client.send(destination, { ...batch, idKind: otherKind })] : []),
      ];
      for (const outcome of outcomes)
        expect(outcome).toMatchObject({ status: 'failed', code: 'invalid_batch', retryable: false });
      expect(server.requests).toHaveLength(0);
    });

    it('an aborted send is a retryable failure', async () => {
      const controller = new AbortController();
      server.delayNext(2_000);
      const pending = client.send(lookAlikeDestination(server), batch, controller.signal);
      controller.abort();
      expect(await pending).toMatchObject({
        status: 'failed',
        code: 'network',
        message: 'aborted',
        retryable: true,
      });
    });
  },
);
