import { MetaConversionsForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const metaConversions = defineAppType({
  appType: 'meta_conversions',
  name: 'Meta Conversions API',
  description:
    'Sends track calls (Segment e-commerce names mapped to Meta standard events) and page views to a Meta pixel through the Conversions API, with hashed user data and the messageId as event_id for deduplication with the browser pixel. Events older than 7 days are skipped.',
  credentials: fields({ accessToken: secret('A Conversions API access token (a system user’s).') }),
  config: fields({
    pixelId: text('The pixel (dataset) id.', { pattern: '^[0-9]{1,32}$' }),
    apiVersion: Type.Optional(
      text('Graph API version, e.g. v24.0 (the default).', { pattern: '^v[0-9]{1,3}\\.[0-9]{1,2}$' }),
    ),
    testEventCode: Type.Optional(
      text('Sends to Events Manager’s Test Events only, e.g. TEST12345.', { maxLength: 64 }),
    ),
  }),
  example: { credentials: { accessToken: 'EAAB0123456789abcdef' }, config: { pixelId: '1234567890' } },
  vendorHost: 'https://graph.facebook.com',
  forwards: { category: 'advertising', forwarder: (client) => new MetaConversionsForwarder(client) },
});
