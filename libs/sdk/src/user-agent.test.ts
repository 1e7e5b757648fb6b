import { parseUserAgent } from './user-agent';

describe('parseUserAgent', () => {
  it.each([
    [
      'Chrome on Windows',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.109 Safari/537.36',
      { browser: 'Chrome 120', os: 'Windows 10', device: 'desktop' },
    ],
    [
      'Edge on Windows 7',
      'Mozilla/5.0 (Windows NT 6.1; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36 Edg/109.0.1518.78',
      { browser: 'Edge 109', os: 'Windows 7', device: 'desktop' },
    ],
    [
      'Safari on macOS',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15',
      { browser: 'Safari 17', os: 'macOS 10.15.7', device: 'desktop' },
    ],
    [
      'Firefox on Linux',
      'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
      { browser: 'Firefox 121', os: 'Linux', device: 'desktop' },
    ],
    [
      'Safari on iPhone',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1.2 Mobile/15E148 Safari/604.1',
      { browser: 'Safari 17', os: 'iOS 17.1.2', device: 'mobile' },
    ],
    [
      'Chrome on iPad',
      'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/119.0.6045.169 Mobile/15E148 Safari/604.1',
      { browser: 'Chrome 119', os: 'iOS 16.6', device: 'tablet' },
    ],
    [
      'Chrome on an Android phone',
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36',
      { browser: 'Chrome 120', os: 'Android 14', device: 'mobile' },
    ],
    [
      'Samsung Internet on an Android tablet',
      'Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0.0.0 Safari/537.36',
      { browser: 'Samsung Internet 23', os: 'Android 13', device: 'tablet' },
    ],
    [
      'Opera on macOS',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36 OPR/105.0.0.0',
      { browser: 'Opera 105', os: 'macOS 10.15.7', device: 'desktop' },
    ],
    [
      'Firefox on iOS',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/121.0 Mobile/15E148 Safari/605.1.15',
      { browser: 'Firefox 121', os: 'iOS 17.2', device: 'mobile' },
    ],
    [
      'the Facebook in-app browser',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/440.0.0.31.105;FBBV/545347062]',
      { browser: 'Facebook 440', os: 'iOS 17.0', device: 'mobile' },
    ],
    [
      'Internet Explorer 11',
      'Mozilla/5.0 (Windows NT 6.3; Trident/7.0; rv:11.0) like Gecko',
      { browser: 'Internet Explorer 11', os: 'Windows 8.1', device: 'desktop' },
    ],
    [
      'headless Chrome',
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36',
      { browser: 'Chrome Headless 131', os: 'Linux', device: 'desktop' },
    ],
    [
      'Chrome OS',
      'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
      { browser: 'Chrome 120', os: 'Chrome OS', device: 'desktop' },
    ],
    [
      'Googlebot',
      'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
      { device: 'bot' },
    ],
  ])('%s', (_name, ua, expected) => {
    expect(parseUserAgent(ua)).toEqual(expected);
  });

  it('tells an iPad from a Mac by its touch points, as iPadOS sends a Mac user agent', () => {
    const ua =
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15';
    expect(parseUserAgent(ua, 5)).toEqual({ browser: 'Safari 17', os: 'iPadOS', device: 'tablet' });
    expect(parseUserAgent(ua, 0)).toMatchObject({ os: 'macOS 10.15.7', device: 'desktop' });
  });

  it('leaves out what it does not recognize', () => {
    expect(parseUserAgent('curl/8.4.0')).toEqual({ device: 'desktop' });
    expect(parseUserAgent('')).toEqual({ device: 'desktop' });
  });
});
