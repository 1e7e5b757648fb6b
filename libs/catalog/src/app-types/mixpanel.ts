import { MixpanelDeletionClient, MixpanelForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

/** Only user deletion needs it: the GDPR API takes a person's OAuth token, not the project's keys. */
const gdprToken = Type.Optional(
  secret('A GDPR API OAuth token (a project owner’s or admin’s, valid one year), for user deletion.'),
);

export const mixpanel = defineAppType({
  appType: 'mixpanel',
  name: 'Mixpanel',
  description:
    'Forwards events to Mixpanel’s Import API, with a project token or a service account (then config.projectId is needed). Deletes users through the GDPR API, which needs the optional gdprToken and the project token (without them a deletion fails with credential_missing).',
  credentials: Type.Union(
    [
      fields({ projectToken: secret('The project token.'), gdprToken }),
      fields({
        serviceAccount: text('Service account user name.'),
        secret: secret('Service account secret.'),
        projectId: Type.Optional(text('The project id (or set it in config).', { pattern: '^[0-9]+$' })),
        gdprToken,
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
  forwards: {
    category: 'product_analytics',
    forwarder: (client) => new MixpanelForwarder(client),
    deletes: (client) => new MixpanelDeletionClient(client),
  },
});
