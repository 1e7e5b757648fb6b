import { AmplitudeForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret } from '../app-type';

export const amplitude = defineAppType({
  appType: 'amplitude',
  name: 'Amplitude',
  description:
    'Forwards events to Amplitude’s HTTP V2 and Batch APIs (track, page and screen as events; identify and group as user and group properties).',
  credentials: fields({ apiKey: secret('The project’s API key.') }),
  config: fields({
    region: Type.Optional(
      Type.Literal('eu', { description: '`eu` for the EU data center; the US one when absent.' }),
    ),
  }),
  example: { credentials: { apiKey: 'amp-0123456789abcdef' }, config: {} },
  vendorHost: 'https://api2.amplitude.com',
  forwards: { category: 'product_analytics', forwarder: (client) => new AmplitudeForwarder(client) },
});
