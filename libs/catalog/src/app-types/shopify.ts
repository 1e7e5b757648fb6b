import { ShopifyConnector, shopifyStreams, textField } from '@pipeline/connectors';
import { Type } from '@sinclair/typebox';
import { defineAppType, fields, secret, text } from '../app-type';

export const shopify = defineAppType({
  appType: 'shopify',
  name: 'Shopify',
  description:
    'Imports orders, customers and products from a shop through the Admin REST API (a custom app’s Admin API access token), incrementally by updated_at.',
  credentials: fields({
    accessToken: secret(
      'Admin API access token of a custom app (shpat_…), with read_orders, read_customers and read_products.',
    ),
  }),
  config: fields({
    shop: text('The shop’s myshopify.com name: `acme` or `acme.myshopify.com`.', {
      pattern: '^[A-Za-z0-9][A-Za-z0-9-]*(\\.myshopify\\.com)?$',
      maxLength: 255,
    }),
    apiVersion: Type.Optional(
      text('Admin API version (YYYY-MM, a quarter’s first month); the connector’s default when absent.', {
        pattern: '^\\d{4}-(01|04|07|10)$',
      }),
    ),
  }),
  example: { credentials: { accessToken: 'shpat_0123456789abcdef' }, config: { shop: 'acme' } },
  vendorHost: 'https://{shop}.myshopify.com',
  recipient: (config) =>
    config.shop ? `https://${config.shop.replace(/\.myshopify\.com$/i, '')}.myshopify.com` : undefined,
  imports: {
    streams: shopifyStreams,
    connector: (app, http) =>
      new ShopifyConnector({
        ...http,
        // Apps saved before config was validated may hold the shop in their credentials.
        shop: textField(app.config, 'shop') || textField(app.credentials, 'shop'),
        accessToken: textField(app.credentials, 'accessToken'),
        ...(textField(app.config, 'apiVersion') ? { apiVersion: textField(app.config, 'apiVersion') } : {}),
      }),
  },
});
