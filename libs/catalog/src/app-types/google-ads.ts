import { GoogleAdsForwarder } from '@pipeline/destinations';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

const customerId = (description: string) => text(description, { pattern: '^[0-9]{3}-?[0-9]{3}-?[0-9]{4}$' });

export const googleAds = defineAppType({
  appType: 'google_ads',
  name: 'Google Ads (offline conversions)',
  description:
    'Uploads track calls named in conversionActions as offline click conversions (uploadClickConversions, partial failure), matched by gclid/gbraid/wbraid or by hashed email and phone. Events with neither, and other calls, are skipped.',
  credentials: fields({
    developerToken: secret('The Google Ads API developer token.'),
    clientId: text('The OAuth client id.'),
    clientSecret: secret('The OAuth client secret.'),
    refreshToken: secret('An OAuth refresh token with the adwords scope.'),
  }),
  config: fields({
    customerId: customerId('The Google Ads customer id (10 digits, dashes allowed).'),
    loginCustomerId: Type.Optional(customerId('The manager account id, when access goes through one.')),
    apiVersion: Type.Optional(
      text('Google Ads API version, e.g. v26 (the default).', { pattern: '^v[0-9]{1,3}$' }),
    ),
    conversionActions: Type.Record(
      // Stryker disable next-line ObjectLiteral: equivalent, TypeBox drops a record key's bounds from the schema
      Type.String({ minLength: 1, maxLength: 200 }),
      Type.String({ pattern: '^[0-9]{1,20}$' }),
      {
        description:
          'Event name → conversion action id (digits). An integration’s config.global.conversionActions replaces it.',
      },
    ),
  }),
  example: {
    credentials: {
      developerToken: 'dev-0123456789abcdef',
      clientId: '0123456789.apps.googleusercontent.com',
      clientSecret: 'GOCSPX-0123456789abcdef',
      refreshToken: '1//0123456789abcdef',
    },
    config: { customerId: '123-456-7890', conversionActions: { 'Order Completed': '1002' } },
  },
  vendorHost: 'https://googleads.googleapis.com',
  forwards: { category: 'advertising', forwarder: (client) => new GoogleAdsForwarder(client) },
});
