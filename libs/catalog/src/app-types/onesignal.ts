import { OneSignalDeletionClient, OneSignalForwarder } from '@pipeline/destinations';
import { defineAppType, fields, secret, text } from '../app-type';

export const onesignal = defineAppType({
  appType: 'onesignal',
  name: 'OneSignal',
  description:
    'Forwards user tags and custom events to OneSignal’s user and custom events APIs. Deletes users by external_id (OneSignal completes it shortly after).',
  credentials: fields({
    appId: text('The OneSignal app id (a UUID).', {
      pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
    }),
    apiKey: secret('The app’s REST API key.'),
  }),
  config: fields({}),
  example: {
    credentials: { appId: '5eb5a37e-b458-11e3-ac11-000c2940e62c', apiKey: 'os-0123456789abcdef' },
    config: {},
  },
  vendorHost: 'https://api.onesignal.com',
  forwards: {
    category: 'push',
    forwarder: (client) => new OneSignalForwarder(client),
    deletes: (client) => new OneSignalDeletionClient(client),
  },
});
