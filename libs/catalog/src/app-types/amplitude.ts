import { AmplitudeDeletionClient, AmplitudeForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret } from '../app-type';

export const amplitude = defineAppType({
  appType: 'amplitude',
  name: 'Amplitude',
  description:
    'Forwards events to Amplitude’s HTTP V2 and Batch APIs (track, page and screen as events; identify and group as user and group properties). Deletes users through the User Privacy API, which needs the optional secretKey (without it a deletion fails with credential_missing).',
  credentials: fields({
    apiKey: secret('The project’s API key.'),
    secretKey: Type.Optional(
      secret('The project’s secret key, for the User Privacy API (user deletion); optional otherwise.'),
    ),
  }),
  config: fields({
    region: Type.Optional(
      Type.Literal('eu', { description: '`eu` for the EU data center; the US one when absent.' }),
    ),
  }),
  example: { credentials: { apiKey: 'amp-0123456789abcdef' }, config: {} },
  vendorHost: 'https://api2.amplitude.com',
  forwards: {
    category: 'product_analytics',
    forwarder: (client) => new AmplitudeForwarder(client),
    deletes: (client) => new AmplitudeDeletionClient(client),
  },
});
