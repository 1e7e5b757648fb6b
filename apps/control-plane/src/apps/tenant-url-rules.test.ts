import { AppError } from '@pipeline/errors';
import { recipientOrigin, secretRequiredForNewHost, TenantUrlPolicy } from './tenant-urls';

// The 422 answers of the URL rules, with a fixed resolver in place of DNS. tenant-urls.test.ts
// covers the same rules through the API over a real database.

const dns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.20'],
  'internal.example.com': ['10.0.0.5'],
};
const policy = new TenantUrlPolicy({
  resolve: async (name) => dns[name] ?? Promise.reject(new Error(`ENOTFOUND ${name}`)),
});

async function refusal(run: Promise<void>): Promise<AppError> {
  const error = await run.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe('TenantUrlPolicy', () => {
  it('names each refused field with the reason, never the address', async () => {
    const error = await refusal(
      policy.assertAllowed(
        {
          url: 'hooks.example.com/x',
          mirror: 'file:///etc/passwd',
          endpoint: 'https://user:pw@hooks.example.com/',
          nested: [{ callbackUrl: 'https://internal.example.com/hook' }],
          fine: 'https://hooks.example.com/ok',
        },
        'body.config',
      ),
    );
    expect({ status: error.status, code: error.code, message: error.message }).toEqual({
      status: 422,
      code: 'url_not_allowed',
      message: 'A URL in the request is not one we send to: only public http(s) hosts are reached',
    });
    expect(error.details?.errors).toEqual([
      { path: 'body.config.url', message: 'is not an absolute URL' },
      { path: 'body.config.mirror', message: 'must be an http or https URL' },
      { path: 'body.config.endpoint', message: 'must not carry a user name or password' },
      {
        path: 'body.config.nested[0].callbackUrl',
        message:
          'names a host that is not public (loopback, private, link-local, unique-local and other internal addresses are refused)',
      },
    ]);
    expect(JSON.stringify(error.details)).not.toContain('10.0.0.5');
  });

  it('passes public URLs and names no resolver answers, and judges the extra origins', async () => {
    await expect(
      policy.assertAllowed({ url: 'https://hooks.example.com/a', other: 'https://unknown.example.net' }, 'b'),
    ).resolves.toBeUndefined();
    const error = await refusal(
      policy.assertAllowed({}, 'body.config', [['body.config.shop', 'http://127.0.0.1']]),
    );
    expect(error.details?.errors).toEqual([
      {
        path: 'body.config.shop',
        message:
          'names a host that is not public (loopback, private, link-local, unique-local and other internal addresses are refused)',
      },
    ]);
  });
});

describe('secretRequiredForNewHost', () => {
  it('is a 422 naming the field that moves the credentials', () => {
    const error = secretRequiredForNewHost('body.config', 'The endpoint');
    if (!(error instanceof AppError)) throw new Error('expected an AppError');
    expect({ status: error.status, code: error.code, message: error.message }).toEqual({
      status: 422,
      code: 'secret_required_for_new_host',
      message:
        "The endpoint moves where the app's stored credentials are sent; enter the credentials again in the same request (a stored secret is sent only to the host it was entered for)",
    });
    expect(error.details?.errors).toEqual([
      { path: 'body.config', message: 'changes the host the stored credentials are sent to' },
    ]);
  });
});

describe('recipientOrigin', () => {
  it('is the origin the catalog names for the app type', () => {
    expect(recipientOrigin('webhook', { url: 'https://hooks.example.com/a/b?c=1' })).toBe(
      'https://hooks.example.com',
    );
    expect(
      recipientOrigin('webhook', { url: 'https://a.example.com/' }, { url: 'https://b.example.com:8443/x' }),
    ).toBe('https://b.example.com:8443');
    expect(recipientOrigin('amplitude', {})).toBeNull();
  });
});
