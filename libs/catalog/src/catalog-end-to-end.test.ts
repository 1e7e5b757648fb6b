import { randomUUID } from 'node:crypto';
import type { Connector } from '@pipeline/connectors';
import {
  hubspotObjects,
  shopifyRecords,
  startHubSpotLookAlike,
  startShopifyLookAlike,
  startStripeLookAlike,
  stripeRecords,
} from '@pipeline/connectors/testing';
import {
  lookAlikeDestination,
  rawSampleEvent,
  startLookAlikeVendor,
  type LookAlikeServer,
  type LookAlikeVendor,
} from '@pipeline/destinations/testing';
import Ajv from 'ajv';
import {
  appTypeDefinition,
  connectorFor,
  forwarderFor,
  forwardingAppTypes,
  importingAppTypes,
} from './catalog';

// Every app type of the catalog, run end to end through the catalog's own factories against
// its vendor's look-alike server, with settings its schemas accept.

const ajv = new Ajv({ allErrors: true, strict: true });
const loopback = ['127.0.0.0/8'];

function expectValidSettings(appType: string, credentials: unknown, config: unknown) {
  const definition = appTypeDefinition(appType)!;
  const checkCredentials = ajv.compile(definition.credentials);
  const checkConfig = ajv.compile(definition.config);
  expect({ appType, valid: checkCredentials(credentials), errors: checkCredentials.errors ?? null }).toEqual({
    appType,
    valid: true,
    errors: null,
  });
  expect({ appType, valid: checkConfig(config), errors: checkConfig.errors ?? null }).toEqual({
    appType,
    valid: true,
    errors: null,
  });
}

describe.each(forwardingAppTypes.map((appType) => [appType]))(
  '%s: events reach the look-alike',
  (appType) => {
    let server: LookAlikeServer;
    beforeAll(async () => {
      server = await startLookAlikeVendor(appType as LookAlikeVendor);
    });
    afterAll(() => server.close());

    it('sends an identify and a track with their values', async () => {
      const destination = lookAlikeDestination(server);
      // The app's settings are ones POST /api/v1/apps accepts.
      expectValidSettings(appType, destination.credentials, destination.appConfig);
      const marker = `m-${randomUUID()}`;
      const email = `${marker}@example.com`;
      // Sent now: advertising APIs refuse conversions older than a few days.
      const now = new Date();
      const fresh = (event: Record<string, unknown>) => {
        const outbound = rawSampleEvent({ ...event, timestamp: now.toISOString() });
        return {
          ...outbound,
          receipt: { ...outbound.receipt, receivedAt: now, batchSentAt: now.toISOString() },
        };
      };
      const events = [
        fresh({ type: 'identify', userId: 'u-1', traits: { email, plan: marker } }),
        fresh({
          type: 'track',
          userId: 'u-1',
          event: 'Order Completed',
          properties: { order_id: marker, value: 42.5, currency: 'EUR', email },
          context: { traits: { email }, page: { url: 'https://shop.example/checkout' } },
        }),
      ];
      const answers: string[] = [];
      const forwarder = forwarderFor(appType, {
        baseUrls: { [appType]: server.url },
        allowPrivateRanges: loopback,
        timeoutMs: 5000,
        onResponse: (statusClass) => answers.push(statusClass),
      })!;
      expect(forwarder.appType).toBe(appType);
      const outcome = await forwarder.send(destination, events);
      // Every request the vendor answered was reported, by its status class (the delivery metrics).
      expect(answers).toEqual(server.requests.map((r) => `${Math.floor(r.status / 100)}xx`));
      expect(outcome.sent + outcome.skipped.length).toBe(events.length);
      expect(outcome.sent).toBeGreaterThan(0);
      expect(server.accepted.length).toBeGreaterThan(0);
      // What arrived carries the values sent, not just a request.
      expect(JSON.stringify(server.accepted.map((a) => a.item))).toContain(marker);
    });
  },
);

interface StartedSource {
  url: string;
  close(): Promise<void>;
  credentials: object;
  config: object;
  /** The primary keys the look-alike holds in a stream. */
  ids(stream: string): string[];
}

/** The look-alike of each importing app type, with records in every stream. */
const sourceLookAlikes: Record<string, () => Promise<StartedSource>> = {
  stripe: async () => {
    const server = await startStripeLookAlike();
    const now = Math.floor(Date.now() / 1000);
    for (const stream of server.data.keys()) server.data.set(stream, stripeRecords(stream, 3, now));
    return {
      url: server.url,
      close: () => server.close(),
      credentials: { secretKey: server.secret },
      config: {},
      ids: (stream) => (server.data.get(stream) ?? []).map((r) => String(r.id)),
    };
  },
  shopify: async () => {
    const server = await startShopifyLookAlike();
    for (const stream of server.data.keys()) server.data.set(stream, shopifyRecords(stream, 3, new Date()));
    return {
      url: server.url,
      close: () => server.close(),
      credentials: { accessToken: server.secret },
      config: { shop: 'catalog-test' },
      ids: (stream) => (server.data.get(stream) ?? []).map((r) => String(r.id)),
    };
  },
  hubspot: async () => {
    const server = await startHubSpotLookAlike();
    for (const stream of ['contacts', 'companies', 'deals'])
      server.data.set(stream, hubspotObjects(stream, 3, new Date()));
    return {
      url: server.url,
      close: () => server.close(),
      credentials: { accessToken: server.secret },
      config: {},
      ids: (stream) => (server.data.get(stream) ?? []).map((o) => String(o.id)),
    };
  },
};

describe('importing app types', () => {
  it('each has a look-alike here', () => {
    expect(Object.keys(sourceLookAlikes).sort()).toEqual([...importingAppTypes].sort());
  });

  describe.each(importingAppTypes.map((appType) => [appType]))('%s', (appType) => {
    let source: StartedSource;
    let connector: Connector;
    beforeAll(async () => {
      source = await sourceLookAlikes[appType]!();
      expectValidSettings(appType, source.credentials, source.config);
      connector = connectorFor(
        {
          appType,
          credentials: source.credentials as Record<string, unknown>,
          config: source.config as Record<string, unknown>,
        },
        { baseUrls: { [appType]: source.url }, attempts: 2, minDelayMs: 1 },
      )!;
    });
    afterAll(() => source?.close());

    it('checks its credentials and reads every stream it offers, record for record', async () => {
      await expect(connector.check()).resolves.toBeUndefined();
      expect(connector.streams.map((s) => s.name)).toEqual(
        appTypeDefinition(appType)!.imports!.streams.map((s) => s.name),
      );
      for (const stream of connector.streams) {
        const ids: unknown[] = [];
        for await (const page of connector.read(stream.name, { cursor: null }))
          ids.push(...page.records.map((r) => r[stream.primaryKey]));
        const expected = source.ids(stream.name);
        expect(expected.length).toBeGreaterThan(0);
        expect({ stream: stream.name, ids: ids.map(String).sort() }).toEqual({
          stream: stream.name,
          ids: [...expected].sort(),
        });
      }
    });
  });
});

describe('factories', () => {
  it('build nothing for app types without that side', () => {
    expect(connectorFor({ appType: 'braze', credentials: {}, config: {} })).toBeUndefined();
    expect(connectorFor({ appType: 'web_tracking', credentials: {}, config: {} })).toBeUndefined();
    expect(connectorFor({ appType: 'nope', credentials: {}, config: {} })).toBeUndefined();
    expect(forwarderFor('shopify')).toBeUndefined();
  });

  it('refuse a Shopify app without a shop before any request', () => {
    expect(() => connectorFor({ appType: 'shopify', credentials: { accessToken: 't' }, config: {} })).toThrow(
      /config.shop/,
    );
  });

  it('never give the webhook an operator base URL: its URL is the tenant’s', async () => {
    const hook = await startLookAlikeVendor('webhook');
    try {
      // Without the loopback allowance the guarded fetch refuses the local hook, base URL or not.
      const forwarder = forwarderFor('webhook', { baseUrls: { webhook: hook.url }, timeoutMs: 2000 })!;
      await expect(
        forwarder.send(lookAlikeDestination(hook), [
          rawSampleEvent({ type: 'track', userId: 'u', event: 'E' }),
        ]),
      ).rejects.toMatchObject({ retryable: false });
      expect(hook.requests).toHaveLength(0);
    } finally {
      await hook.close();
    }
  });
});
