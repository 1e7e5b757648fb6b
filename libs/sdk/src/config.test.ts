import { defaults, resolveConfig } from './config';

describe('resolveConfig', () => {
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  beforeEach(() => {
    warnings.length = 0;
  });

  it("reads the snippet's writeKey and host, with the defaults of docs/sdk.md#install", () => {
    expect(resolveConfig({ writeKey: 'wk_1', host: 'https://t.example.com/' }, null, warn)).toEqual({
      writeKey: 'wk_1',
      host: 'https://t.example.com',
      batchSize: 20,
      flushIntervalMs: 5000,
      defaultConsent: null,
    });
    expect(defaults.batchSize).toBe(20);
    expect(warnings).toEqual([]);
  });

  it('prefers apiHost, and falls back to the origin the SDK was loaded from', () => {
    expect(resolveConfig({ writeKey: 'k', host: 'https://a', apiHost: 'https://b' }, null, warn).host).toBe(
      'https://b',
    );
    expect(resolveConfig({ writeKey: 'k' }, 'https://cdn.example.com/v1/sdk.js', warn).host).toBe(
      'https://cdn.example.com',
    );
    expect(resolveConfig({ writeKey: 'k', host: 'javascript:alert(1)' }, null, warn).host).toBeNull();
    expect(warnings).toEqual([
      'host must be an http(s) URL',
      'no tracking host: events are kept but not sent',
    ]);
  });

  it('takes batchSize up to 100 and clamps what is out of range, saying so', () => {
    expect(resolveConfig({ writeKey: 'k', batchSize: 100 }, null, warn).batchSize).toBe(100);
    expect(resolveConfig({ writeKey: 'k', batchSize: 500 }, null, warn).batchSize).toBe(100);
    expect(resolveConfig({ writeKey: 'k', batchSize: 0 }, null, warn).batchSize).toBe(1);
    expect(resolveConfig({ writeKey: 'k', batchSize: '50' }, null, warn).batchSize).toBe(20);
    expect(resolveConfig({ writeKey: 'k', flushInterval: 10 }, null, warn).flushIntervalMs).toBe(100);
    expect(resolveConfig({ writeKey: 'k', flushInterval: 2000 }, null, warn).flushIntervalMs).toBe(2000);
    expect(warnings).toEqual([
      'no tracking host: events are kept but not sent',
      'no tracking host: events are kept but not sent',
      'batchSize must be an integer from 1 to 100; using 100',
      'no tracking host: events are kept but not sent',
      'batchSize must be an integer from 1 to 100; using 1',
      'no tracking host: events are kept but not sent',
      'batchSize must be a number; using 20',
      'no tracking host: events are kept but not sent',
      'flushInterval must be an integer from 100 to 3600000; using 100',
      'no tracking host: events are kept but not sent',
    ]);
  });

  it('sends nothing without a real write key, and takes a default consent of booleans', () => {
    expect(resolveConfig({ host: 'https://t' }, null, warn).writeKey).toBeNull();
    expect(resolveConfig({ writeKey: 'YOUR_WRITE_KEY', host: 'https://t' }, null, warn).writeKey).toBeNull();
    expect(
      resolveConfig({ writeKey: 'k', host: 'https://t', consent: { marketing: false, x: 1 } }, null, warn)
        .defaultConsent,
    ).toEqual({ marketing: false });
    expect(warnings).toEqual([
      'no writeKey in the snippet: events are kept but not sent',
      'the snippet still has the placeholder YOUR_WRITE_KEY: events are kept but not sent',
      'consent values must be booleans; ignored: x',
    ]);
  });
});
