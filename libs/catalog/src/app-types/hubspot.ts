import { HubSpotConnector, hubspotStreams, textField } from '@pipeline/connectors';
import { HubSpotDeletionClient, HubSpotForwarder } from '@pipeline/destinations';
import { defineAppType, fields, secret } from '../app-type';

export const hubspot = defineAppType({
  appType: 'hubspot',
  name: 'HubSpot',
  description:
    'As a source, imports CRM contacts, companies and deals (CRM v3: full reads by list, incremental reads by search on the last-modified date; archived records are not read, so deletions do not reach the warehouse). As a destination, upserts contacts by email from identify calls (only properties the account defines); deletes contacts by the emails the warehouse held, through the GDPR delete endpoint.',
  credentials: fields({
    accessToken: secret(
      'Private app access token (pat-…), with crm.objects.contacts.read/write, crm.objects.companies.read, crm.objects.deals.read and crm.schemas.contacts.read.',
    ),
  }),
  config: fields({}),
  example: { credentials: { accessToken: 'pat-na1-00000000-0000-0000-0000-000000000000' }, config: {} },
  vendorHost: 'https://api.hubapi.com',
  imports: {
    streams: hubspotStreams,
    connector: (app, http) =>
      new HubSpotConnector({ ...http, accessToken: textField(app.credentials, 'accessToken') }),
  },
  forwards: {
    category: 'customer_data',
    forwarder: (client) => new HubSpotForwarder(client),
    deletes: (client) => new HubSpotDeletionClient(client),
  },
});
