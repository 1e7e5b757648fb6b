import { SegmentForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const segment = defineAppType({
  appType: 'segment',
  name: 'Segment-compatible HTTP API',
  description:
    'Forwards events to Segment’s HTTP Tracking API, or to any service that speaks it (RudderStack, Jitsu) at config.endpoint.',
  credentials: fields({ writeKey: secret('The receiving source’s write key.') }),
  config: fields({
    endpoint: Type.Optional(
      text(
        'An https base URL in place of Segment’s (https://api.segment.io), e.g. a RudderStack data plane.',
        {
          pattern: '^https://[^\\s/?#@]+(/[^\\s?#]*)?$',
        },
      ),
    ),
  }),
  example: { credentials: { writeKey: 'seg-0123456789abcdef' }, config: {} },
  vendorHost: 'https://api.segment.io',
  recipient: (config) => config.endpoint ?? 'https://api.segment.io',
  forwards: { category: 'customer_data', forwarder: (client) => new SegmentForwarder(client) },
});
