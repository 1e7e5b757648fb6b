import { OneSignalDeletionClient } from './onesignal-deletion';
import { OneSignalForwarder } from './onesignal-forwarder';
import { vendorClientOptions } from '../../forwarder';
import { oneOfEachType } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('OneSignal deletion client (delete user look-alike)', () => {
  let server: LookAlikeServer;
  let client: OneSignalDeletionClient;

  beforeEach(async () => {
    server = await startLookAlikeVendor('onesignal');
    client = new OneSignalDeletionClient(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('deletes a known user by external_id with the App API key: done', async () => {
    const destination = lookAlikeDestination(server);
    await new OneSignalForwarder(vendorClientOptions({}, server.url)).send(destination, [
      oneOfEachType().identify,
    ]);
    const [batch] = client.plan({ userIds: ['user-42'], anonymousIds: ['anon'], emails: [] });

    expect(await client.send(destination, batch!)).toEqual({ status: 'done' });

    const request = server.requests.at(-1)!;
    expect(request.method).toBe('DELETE');
    expect(request.path).toBe('/apps/5eb5a37e-b458-11e3-ac11-000c2940e62c/users/by/external_id/user-42');
    expect(request.headers.authorization).toBe('Key os-app-key');
    expect(request.body).toBe('');
    expect(request.status).toBe(200);
  });

  it('an id OneSignal never held (404 user) is done; a wrong app id (404 app) is refused', async () => {
    const [batch] = client.plan({ userIds: ['nobody/ü'], anonymousIds: [], emails: [] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toEqual({ status: 'done' });
    expect(server.requests[0]?.path).toBe(
      `/apps/5eb5a37e-b458-11e3-ac11-000c2940e62c/users/by/external_id/${encodeURIComponent('nobody/ü')}`,
    );
    expect(server.requests[0]?.status).toBe(404);
    const wrongApp = lookAlikeDestination(server, {
      credentials: { appId: '00000000-0000-0000-0000-000000000000', apiKey: 'os-app-key' },
    });
    expect(await client.send(wrongApp, batch!)).toEqual({
      status: 'failed',
      code: 'vendor_refused',
      message: 'http_404: OneSignal knows no app of this app id',
      retryable: false,
    });
  });
});
