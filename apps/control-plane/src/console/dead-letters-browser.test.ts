import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { Producer } from 'kafkajs';
import { type Browser, type Page } from 'playwright-core';
import { forwarderFor } from '@pipeline/catalog';
import { loadConfig } from '@pipeline/config';
import {
  createDestination,
  deliveryHeaders,
  deliveryTopicsFor,
  runConsumer,
  TenantDirectory,
  type RunningConsumer,
} from '@pipeline/destinations';
import { startLookAlikeVendor, topicRecords, type LookAlikeServer } from '@pipeline/destinations/testing';
import { outboxKey, toOutboxEnvelopes } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneClient } from '@pipeline/tenancy';
import { DeadLetterIndexer } from '../dead-letters/dead-letter-index';
import { KafkaDeadLetterReplayer } from '../dead-letters/dead-letter-replayer';
import { launchChromium } from '../testing/chromium';
import { startHarness, testDeliveryToken, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import { consoleDirectory } from './console-files';

// Self-serve dead letters end to end, as a tenant meets them: an event goes through the outbox
// to the real Amplitude consumer (runConsumer + createDestination, its tenants looked up from
// this control plane), whose look-alike answers 400 to the app's wrong API key, so the record is
// dead-lettered; the control plane's index picks it up and the console lists it. The app's key
// is fixed through the API, Replay is clicked, and the look-alike receives the event exactly
// once; Replay on it again sends nothing. Screenshots in .reports/console/.

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');
const logger = createLogger({ service: 'dead-letters-browser-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'dead-letters-browser',
  logger,
});
const prefix = `test.${randomUUID()}.`;
const outbox = `${prefix}tracking.events.v1`;
const topics = deliveryTopicsFor('amplitude', prefix);

let h: Harness;
let a: Tenant;
let b: Tenant;
let server: Server;
let base: string;
let browser: Browser;
let amplitude: LookAlikeServer;
let producer: Producer;
let replayer: KafkaDeadLetterReplayer;
let indexer: DeadLetterIndexer;
let consumer: RunningConsumer;
let ampAppId: string;
let writeKeyId: string;
let integrationId: string;

const openPages = new Set<Page>();

async function signedIn(key: string, hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(30_000);
  openPages.add(page);
  page.on('close', () => openPages.delete(page));
  await page.goto(`${base}/console/${hash}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  await ensureTopics(
    kafka,
    [{ topic: outbox, numPartitions: 1 }, { ...topics.retry, numPartitions: 1 }, topics.deadLetter],
    { replicationFactor: 1, logger },
  );
  replayer = new KafkaDeadLetterReplayer(kafka, prefix);
  h = await startHarness('dead letters browser', { deadLetterReplayer: replayer });
  server = createServer(h.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  indexer = new DeadLetterIndexer({
    kafka,
    dataSource: h.db.dataSource,
    logger,
    kinds: ['amplitude'],
    topicPrefix: prefix,
    replicationFactor: 1,
  });
  indexer.start();

  amplitude = await startLookAlikeVendor('amplitude');
  a = await h.tenant();
  b = await h.tenant();
  const api = h.as(a.key);
  const web = await api.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Website' });
  // The wrong key: the look-alike answers 400 "Invalid API key", as Amplitude does.
  const amp = await api
    .post('/api/v1/apps')
    .send({ appType: 'amplitude', displayName: 'Amplitude EU', credentials: { apiKey: 'wrong-key' } });
  expect([web.status, amp.status]).toEqual([201, 201]);
  ampAppId = amp.body.data.id as string;
  const integration = await api.post('/api/v1/integrations').send({
    sourceAppId: web.body.data.id,
    destinationAppId: ampAppId,
    dataType: 'events',
    config: { global: {}, tasks: [{ task_type: 'events' }] },
    schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
  });
  expect(integration.status).toBe(201);
  integrationId = integration.body.data.id as string;
  const key = await api.post('/api/v1/write-keys').send({ name: 'website' });
  writeKeyId = key.body.data.id as string;

  // The delivery app's Amplitude consumer, in process: its tenants from this control plane's
  // internal lookup (with the Amplitude consumer's own token), looked up again after 1 ms so the
  // fixed key is used at once.
  const tenants = new TenantDirectory(
    new ControlPlaneClient(base, testDeliveryToken('amplitude'), logger),
    { ttlMs: 1 },
    logger,
  );
  consumer = await runConsumer({
    kafka,
    destination: createDestination('amplitude', {
      logger,
      warehouseUrl: 'postgres://unused@127.0.0.1:1/unused',
      tenants,
      forwarder: forwarderFor('amplitude', {
        baseUrls: { amplitude: amplitude.url },
        fetch: globalThis.fetch,
      }),
    }),
    topics: { source: outbox, retry: topics.retry.topic, deadLetter: topics.deadLetter.topic },
    groupId: `${prefix}delivery.amplitude`,
    logger,
    maxWaitTimeInMs: 100,
    policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 100 },
  });
  await consumer.joined;
  producer = createProducer(kafka);
  await producer.connect();
  browser = await launchChromium();
}, 120_000);

afterEach(async () => {
  for (const page of openPages) {
    const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').slice(-60);
    await page
      .screenshot({ path: path.join(SCREENSHOTS, `failed-${name}.png`), fullPage: true })
      .catch(() => {});
    await page.close();
  }
});

afterAll(async () => {
  await browser?.close();
  await consumer?.stop();
  await indexer?.stop();
  await producer?.disconnect();
  await replayer?.close();
  await amplitude?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
});

/** The look-alike's accepted events of this message id. */
const received = (messageId: string) => amplitude.accepted.filter((a) => a.item.insert_id === messageId);

it('lists an event the vendor refused, replays it once after the fix, and a second replay sends nothing', async () => {
  const messageId = randomUUID();
  const [{ envelope, json }] = toOutboxEnvelopes(
    {
      v: 2,
      accountId: a.accountId,
      writeKeyId,
      batchId: randomUUID(),
      receivedAt: new Date().toISOString(),
      ip: '203.0.113.7',
      userAgent: 'Mozilla/5.0',
    },
    [
      {
        type: 'track',
        event: 'Order Completed',
        messageId,
        anonymousId: 'visitor-42',
        timestamp: new Date().toISOString(),
        properties: { total: 42.5, currency: 'EUR' },
      },
    ],
  ) as [{ envelope: Parameters<typeof outboxKey>[0]; json: string }];
  await producer.send({ topic: outbox, acks: -1, messages: [{ key: outboxKey(envelope), value: json }] });

  // Refused (400), dead-lettered by the consumer, indexed by the control plane.
  const letter = await waitUntil('the dead letter in the API', async () => {
    const page = await h.as(a.key).get('/api/v1/dead-letters');
    return (
      page.body.data as { id: string; messageIds: string[]; reasonCode: string; destinationName: string }[]
    )?.find((l) => l.messageIds.includes(messageId));
  });
  expect(letter).toMatchObject({ reasonCode: 'http_400', destinationName: 'Amplitude EU' });
  expect(received(messageId)).toHaveLength(0);

  const page = await signedIn(a.key, '#/dead-letters');
  const group = page.getByRole('region', { name: /Amplitude EU.*http_400/ });
  await group.waitFor();
  expect(await group.locator('dd').first().innerText()).toBe('1');
  await shot(page, 'dead-letters');
  await group.locator('summary', { hasText: messageId }).click();
  const events = page.getByLabel(`Events of ${messageId}`);
  await events.waitFor();
  expect(JSON.parse(await events.innerText())).toEqual([
    expect.objectContaining({ event: 'Order Completed', messageId }),
  ]);
  await shot(page, 'dead-letters-events');

  // The fix: the app's right key, through the API.
  const fixed = await h
    .as(a.key)
    .patch(`/api/v1/apps/${ampAppId}`)
    .send({ credentials: { apiKey: 'amp-test-key' } });
  expect(fixed.status).toBe(200);

  await page.getByLabel(`Select the dead letter of ${messageId}`).check();
  await page.getByRole('button', { name: 'Replay selected (1)' }).click();
  await page.getByRole('status').getByText('Replayed 1, skipped 0.').waitFor();
  await page.getByText('No pending dead letters.').waitFor();
  await shot(page, 'dead-letters-replayed');
  await waitUntil('the replayed event at the look-alike', async () => received(messageId).length > 0);
  expect(received(messageId)).toHaveLength(1);

  // Replay on it again: the API skips it, and no second record goes to the retry topic.
  await page.getByLabel('Status').selectOption('replayed');
  await page.getByLabel(`Select the dead letter of ${messageId}`).check();
  await page.getByRole('button', { name: 'Replay selected (1)' }).click();
  await page
    .getByRole('status')
    .getByText('Replayed 0, skipped 1 (already replayed or discarded).')
    .waitFor();
  await shot(page, 'dead-letters-replayed-again');
  const retried = (await topicRecords(kafka, topics.retry.topic)).filter((r) => r.value.includes(messageId));
  expect(retried).toHaveLength(1);
  expect(received(messageId)).toHaveLength(1);
  await page.close();

  // Account B's key sees none of A's letters.
  const other = await signedIn(b.key, '#/dead-letters');
  await other.getByText('No pending dead letters.').waitFor();
  await other.getByLabel('Status').selectOption('replayed');
  await other.getByText('No replayed dead letters.').waitFor();
  await shot(other, 'dead-letters-other-account');
  await other.close();
}, 120_000);

it('shows a read-only key the letters without Replay or Discard, and replays nothing', async () => {
  // A dead letter as the consumer parks it (its headers), straight into the dead-letter topic.
  const messageId = randomUUID();
  const envelope = {
    v: 2,
    accountId: a.accountId,
    writeKeyId,
    batchId: randomUUID(),
    receivedAt: new Date().toISOString(),
    ip: null,
    userAgent: null,
    events: [
      {
        type: 'track',
        event: 'Refused',
        messageId,
        anonymousId: 'visitor-43',
        timestamp: new Date().toISOString(),
      },
    ],
  };
  await producer.send({
    topic: topics.deadLetter.topic,
    acks: -1,
    messages: [
      {
        key: 'visitor-43',
        value: JSON.stringify(envelope),
        headers: {
          [deliveryHeaders.destination]: 'amplitude',
          [deliveryHeaders.target]: integrationId,
          [deliveryHeaders.attempt]: '1',
          [deliveryHeaders.reason]: 'http_422: Amplitude refused the event',
          [deliveryHeaders.origin]: `${outbox}/0/999`,
          [deliveryHeaders.permanent]: 'true',
          [deliveryHeaders.deadLetteredAt]: new Date().toISOString(),
        },
      },
    ],
  });
  await waitUntil('the letter indexed', async () => {
    const listed = await h.as(a.key).get('/api/v1/dead-letters?reasonCode=http_422');
    return listed.body.data?.length === 1;
  });
  const readOnly = await a.keyWith(['dead_letters.read']);
  const page = await signedIn(readOnly, '#/dead-letters');
  await page.getByRole('region', { name: /Amplitude EU.*http_422/ }).waitFor();
  await page.getByText('http_422: Amplitude refused the event').waitFor();
  // A read-only key sees the letters, and no button or checkbox the API would answer 403.
  expect(await page.getByRole('button', { name: /Replay|Discard/ }).count()).toBe(0);
  expect(await page.getByRole('checkbox').count()).toBe(0);
  await shot(page, 'dead-letters-read-only');
  await page.close();
  // The key itself is refused by the API (403 naming the scope), and the letter stays pending.
  const refused = await h.as(readOnly).post('/api/v1/dead-letters/replay').send({ reasonCode: 'http_422' });
  expect(refused.status).toBe(403);
  const [letter] = (await h.as(a.key).get('/api/v1/dead-letters?reasonCode=http_422')).body.data;
  expect(letter).toMatchObject({ status: 'pending', messageIds: [messageId] });
}, 60_000);
