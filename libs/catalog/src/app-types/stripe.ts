import { StripeConnector, stripeStreams, textField } from '@pipeline/connectors';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const stripe = defineAppType({
  appType: 'stripe',
  name: 'Stripe',
  description:
    'Imports customers, charges, invoices and subscriptions through Stripe’s REST API with a secret or restricted key (read access).',
  credentials: fields({
    secretKey: secret('Secret key (sk_…) or restricted key (rk_…) with read access.', {
      pattern: '^(sk|rk)_[A-Za-z0-9_]+$',
    }),
  }),
  config: fields({
    apiVersion: Type.Optional(
      text('Stripe-Version header, e.g. 2025-09-30.clover; the account’s default when absent.'),
    ),
  }),
  example: { credentials: { secretKey: 'sk_test_4eC39HqLyjWDarjtT1zdp7dc' }, config: {} },
  vendorHost: 'https://api.stripe.com',
  imports: {
    streams: stripeStreams,
    connector: (app, http) =>
      new StripeConnector({
        ...http,
        // `apiKey`: the field name before credentials were validated.
        secretKey: textField(app.credentials, 'secretKey') || textField(app.credentials, 'apiKey'),
        ...(textField(app.config, 'apiVersion') ? { apiVersion: textField(app.config, 'apiVersion') } : {}),
      }),
  },
});
