import { MixpanelForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const mixpanel = defineAppType({
  appType: 'mixpanel',
  name: 'Mixpanel',
  description:
    'Forwards events to Mixpanel’s Import API, with a project token or a service account (then config.projectId is needed).',
  credentials: Type.Union(
    [
      fields({ projectToken: secret('The project token.') }),
      fields({
        serviceAccount: text('Service account user name.'),
        secret: secret('Service account secret.'),
        projectId: Type.Optional(text('The project id (or set it in config).', { pattern: '^[0-9]+$' })),
      }),
    ],
    { description: 'A project token, or a service account with its secret.' },
  ),
  config: fields({
    region: Type.Optional(
      Type.Union([Type.Literal('eu'), Type.Literal('in')], {
        description: '`eu` or `in` for those data residencies; the US one when absent.',
      }),
    ),
    projectId: Type.Optional(text('The project id, for a service account.', { pattern: '^[0-9]+$' })),
  }),
  example: { credentials: { projectToken: 'mp-0123456789abcdef' }, config: {} },
  vendorHost: 'https://api.mixpanel.com',
  forwards: { category: 'product_analytics', forwarder: (client) => new MixpanelForwarder(client) },
});
