import { CustomerIoDeletionClient, CustomerIoForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const customerIo = defineAppType({
  appType: 'customer_io',
  name: 'Customer.io',
  description:
    'Forwards people and events to Customer.io’s Track API (batch endpoint). Deletes people by suppressing them (deleted, and the id refused from then on).',
  credentials: fields({
    siteId: text('The workspace’s Site ID.'),
    apiKey: secret('The Track API key.'),
  }),
  config: fields({
    region: Type.Optional(
      Type.Literal('eu', { description: '`eu` for the EU region; the US one when absent.' }),
    ),
  }),
  example: { credentials: { siteId: 'cio-site-0123', apiKey: 'cio-0123456789abcdef' }, config: {} },
  vendorHost: 'https://track.customer.io',
  forwards: {
    category: 'messaging',
    forwarder: (client) => new CustomerIoForwarder(client),
    deletes: (client) => new CustomerIoDeletionClient(client),
  },
});
