import { InvalidConfig } from '../../destination-settings';
import { webhookUrl } from './webhook-url';

function refusal(appConfig: Record<string, unknown>, global: Record<string, unknown>): string {
  try {
    webhookUrl(appConfig, global);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidConfig);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

const app = { url: 'https://hooks.example.com/in/' };
const elsewhere = 'config.global.url must be on the origin of the app’s url';

describe('webhookUrl', () => {
  it('is the app’s URL, or an override on its origin (another path)', () => {
    expect(webhookUrl(app, {})).toBe('https://hooks.example.com/in');
    expect(webhookUrl(app, { url: '' })).toBe('https://hooks.example.com/in');
    expect(webhookUrl(app, { url: 'https://hooks.example.com/other/' })).toBe(
      'https://hooks.example.com/other',
    );
    expect(webhookUrl(app, { url: 'https://HOOKS.example.com:443/x' })).toBe(
      'https://HOOKS.example.com:443/x',
    );
    expect(webhookUrl({ url: 'http://hooks.example.com' }, {})).toBe('http://hooks.example.com');
  });

  it.each([
    ['another host', 'https://evil.example.com/in'],
    ['a subdomain', 'https://a.hooks.example.com/in'],
    ['the host as a prefix of another', 'https://hooks.example.com.evil.io/in'],
    ['another port', 'https://hooks.example.com:8443/in'],
    ['plain http', 'http://hooks.example.com/in'],
    ['an IP literal', 'https://127.0.0.1/in'],
  ])('refuses an override on %s, where the signing secret would go', (_, url) => {
    expect(refusal(app, { url })).toBe(elsewhere);
  });

  it('refuses what is missing, not a URL, or carries credentials', () => {
    expect(refusal({}, {})).toBe('appConfig.url is required');
    expect(refusal({ url: 5 }, {})).toBe('appConfig.url must be a string');
    expect(refusal({ url: 'nope' }, {})).toBe('the webhook url is not a URL');
    expect(refusal(app, { url: 'nope' })).toBe('config.global.url is not a URL');
    expect(refusal(app, { url: 'https://u:p@hooks.example.com/in' })).toBe(
      'config.global.url must not carry credentials',
    );
    expect(refusal(app, { url: 'ftp://hooks.example.com/in' })).toBe(
      'config.global.url must be an http(s) URL',
    );
    expect(refusal(app, { url: 5 })).toBe('config.global.url must be a string');
  });
});
