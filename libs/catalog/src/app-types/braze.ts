import { BrazeDeletionClient, BrazeForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const braze = defineAppType({
  appType: 'braze',
  name: 'Braze',
  description:
    'Forwards events, purchases and user attributes to Braze’s /users/track endpoint on the instance’s REST endpoint. Deletes users by external_id through /users/delete (the key needs the users.delete permission).',
  credentials: fields({ apiKey: secret('REST API key with the users.track permission.') }),
  config: fields({
    restEndpoint: text('The instance’s REST endpoint, https://rest.<cluster>.braze.com (or .braze.eu).', {
      pattern: '^https://rest\\.[a-z0-9-]+\\.braze\\.(com|eu)/?$',
    }),
    appId: Type.Optional(text('The Braze app identifier sent with events and purchases.')),
  }),
  example: {
    credentials: { apiKey: 'braze-0123456789abcdef' },
    config: { restEndpoint: 'https://rest.iad-01.braze.com' },
  },
  vendorHost: 'https://rest.<cluster>.braze.com',
  recipient: (config) => config.restEndpoint,
  forwards: {
    category: 'messaging',
    forwarder: (client) => new BrazeForwarder(client),
    deletes: (client) => new BrazeDeletionClient(client),
  },
});
