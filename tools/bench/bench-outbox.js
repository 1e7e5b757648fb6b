// The outbox as the delivery benchmarks fill and clear it: track events as a site sends them,
// written to a fresh outbox topic in records of 20 as ingestion writes a batch, the rows of an
// account's events table counted, and the topics and consumer groups of a run deleted after it.
// Shared by warehouse-load.js and capacity.js.
const { randomUUID } = require('node:crypto');
const path = require('node:path');

const root = path.join(__dirname, '../..');
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/delivery/dist')] }));

/** Events per outbox record: a /collect batch of 20. */
const PER_RECORD = 20;

const makeEvents = (n) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'track',
    event: 'Product Viewed',
    messageId: randomUUID(),
    anonymousId: `anon-${i % 500}`,
    timestamp: new Date().toISOString(),
    properties: { sku: `SKU-${i % 100}`, price: 12.5, currency: 'EUR' },
    context: {
      library: { name: 'bench', version: '1' },
      page: { url: 'https://shop.example/p', path: '/p', title: 'Product' },
      campaign: { source: 'newsletter', medium: 'email' },
    },
  }));

/** The receipt ingestion would write for a fresh account's batches. */
const receiptFor = (accountId) => ({
  v: 2,
  accountId,
  writeKeyId: randomUUID(),
  batchId: 'bench',
  receivedAt: new Date().toISOString(),
  ip: '203.0.113.1',
  userAgent: 'bench',
});

/** Writes the events to the outbox topic (created beforehand) in records of PER_RECORD, acks -1. */
async function fillOutbox(kafka, topic, receipt, events) {
  const { createProducer } = lib('@pipeline/kafka');
  const { outboxKey, toOutboxEnvelopes } = lib('@pipeline/events');
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    for (let i = 0; i < events.length; i += 2000) {
      const messages = [];
      for (let j = i; j < Math.min(i + 2000, events.length); j += PER_RECORD) {
        for (const { envelope, json } of toOutboxEnvelopes(
          { ...receipt, batchId: `b${j}` },
          events.slice(j, j + PER_RECORD),
        ))
          messages.push({ key: outboxKey(envelope), value: json });
      }
      await producer.send({ topic, acks: -1, messages });
    }
  } finally {
    await producer.disconnect();
  }
}

/** Rows in a PostgreSQL warehouse schema's events table; 0 until the first load creates it. */
async function countEvents(client, schema) {
  try {
    return (await client.query(`SELECT count(*)::int AS n FROM ${schema}.events`)).rows[0].n;
  } catch {
    return 0;
  }
}

/**
 * Deletes a consumer group, waiting (at most 20 s) while the broker still counts members of
 * consumers that have just stopped: several of them leave one after the other, and a group that
 * is not empty yet cannot be deleted. A group that does not exist is done.
 */
async function deleteGroup(admin, group) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await admin.deleteGroups([group]);
      return;
    } catch (error) {
      const code = error.groups?.[0]?.error?.type;
      if (code !== 'NON_EMPTY_GROUP' || Date.now() > deadline) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** Deletes the outbox, retry and dead-letter topics and the consumer groups of each prefix. */
async function deleteDeliveryTopics(kafka, destination, prefixes) {
  const { pipelineTopics, prefixedTopic } = lib('@pipeline/kafka');
  const { consumerGroupFor, deliveryTopicsFor, retryGroupFor } = lib('@pipeline/destinations');
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const prefix of prefixes) {
      const topics = deliveryTopicsFor(destination, prefix);
      await admin
        .deleteTopics({
          topics: [
            prefixedTopic(pipelineTopics.trackingEvents, prefix).topic,
            topics.retry.topic,
            topics.deadLetter.topic,
          ],
        })
        .catch(() => undefined);
      for (const group of [
        consumerGroupFor(destination, prefix),
        retryGroupFor(consumerGroupFor(destination, prefix)),
      ])
        await deleteGroup(admin, group);
    }
  } finally {
    await admin.disconnect();
  }
}

module.exports = { PER_RECORD, makeEvents, receiptFor, fillOutbox, countEvents, deleteDeliveryTopics };
