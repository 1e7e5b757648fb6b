import { lookAlikeCredentials } from '@pipeline/destinations/testing';
import type { Harness } from './harness';

type Client = ReturnType<Harness['as']>;

/**
 * Through the API: a Braze app, a daily integration of the users' `plan` trait into it, and one
 * run of it started now. Fails the test on any answer but 201, 201 and 202.
 */
export async function startBrazeUsersRun(
  client: Client,
): Promise<{ appId: string; integrationId: string; jobId: string }> {
  const app = await client.post('/api/v1/apps').send({
    appType: 'braze',
    displayName: 'Braze',
    credentials: lookAlikeCredentials.braze,
    config: { restEndpoint: 'https://rest.iad-01.braze.com' },
  });
  if (app.status !== 201) throw new Error(`creating the Braze app answered ${app.status}: ${app.text}`);
  const appId = (app.body as { data: { id: string } }).data.id;
  const integration = await client.post('/api/v1/integrations').send({
    dataType: 'users',
    destinationAppId: appId,
    schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
    config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
  });
  if (integration.status !== 201)
    throw new Error(`creating the integration answered ${integration.status}: ${integration.text}`);
  const integrationId = (integration.body as { data: { id: string } }).data.id;
  const run = await client.post(`/api/v1/integrations/${integrationId}/run`);
  if (run.status !== 202) throw new Error(`starting the run answered ${run.status}: ${run.text}`);
  return { appId, integrationId, jobId: (run.body as { data: { id: string } }).data.id };
}
