import { WebhookDeletionClient, WebhookForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const webhook = defineAppType({
  appType: 'webhook',
  name: 'Webhook',
  description:
    'POSTs batches of Segment-spec messages to your URL, signed with HMAC-SHA256, and one signed {"type":"delete"} message per id when a person is deleted. An integration may send to another path on the same host (config.global.url); internal addresses are refused.',
  credentials: fields({ signingSecret: secret('The key of the HMAC-SHA256 signature header.') }),
  config: fields({
    url: Type.Optional(
      text('The http(s) URL to POST to.', { pattern: '^https?://[^\\s/?#@]+(/[^\\s]*)?$', maxLength: 2048 }),
    ),
  }),
  example: {
    credentials: { signingSecret: 'whsec-0123456789abcdef' },
    config: { url: 'https://hooks.example.com/pipeline' },
  },
  // The signing secret signs for this URL; an integration's config.global.url overrides it.
  recipient: (config, global) => (typeof global?.url === 'string' ? global.url : config.url),
  forwards: {
    category: 'webhook',
    forwarder: (client) => new WebhookForwarder(client),
    deletes: (client) => new WebhookDeletionClient(client),
  },
});
