export type DeviceType = 'mobile' | 'tablet' | 'desktop' | 'bot';

export interface UserAgentInfo {
  /** Name and major version, e.g. `Chrome 120`. */
  browser?: string;
  /** Name and version, e.g. `macOS 10.15.7`, `Windows 10`, `iOS 17.1`. */
  os?: string;
  device: DeviceType;
}

// Order matters: Edge, Opera, Samsung and in-app browsers also say "Chrome" and "Safari", and
// Chrome says "Safari" too, so the more specific tokens are tried first.
const browsers: readonly [RegExp, string][] = [
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/\b(?:OPR|OPiOS|Opera)\/(\d+)/, 'Opera'],
  [/\bSamsungBrowser\/(\d+)/, 'Samsung Internet'],
  [/\bYaBrowser\/(\d+)/, 'Yandex'],
  [/\bFBAV\/(\d+)/, 'Facebook'],
  [/\bInstagram (\d+)/, 'Instagram'],
  [/\b(?:Firefox|FxiOS)\/(\d+)/, 'Firefox'],
  [/\bCriOS\/(\d+)/, 'Chrome'],
  [/\bHeadlessChrome\/(\d+)/, 'Chrome Headless'],
  [/\bChrom(?:e|ium)\/(\d+)/, 'Chrome'],
  [/\bVersion\/(\d+)(?:\.\d+)*.*\bSafari\//, 'Safari'],
  [/(?:MSIE |Trident\/.*\brv:)(\d+)/, 'Internet Explorer'],
];

const windowsVersions: Record<string, string> = {
  '10.0': '10',
  '6.3': '8.1',
  '6.2': '8',
  '6.1': '7',
  '6.0': 'Vista',
  '5.1': 'XP',
};

const dotted = (version: string) => version.replace(/_/g, '.');

function osOf(ua: string, touchPoints: number): string | undefined {
  let m = /Windows NT (\d+\.\d+)/.exec(ua);
  if (m?.[1]) return `Windows ${windowsVersions[m[1]] ?? m[1]}`;
  m = /(?:iPhone|iPad|iPod)(?:.*?) OS (\d+(?:_\d+)*)/.exec(ua);
  if (m?.[1]) return `iOS ${dotted(m[1])}`;
  // iPadOS 13+ presents itself as a Mac; only touch support tells them apart.
  if (/Macintosh/.test(ua) && touchPoints > 1) return 'iPadOS';
  m = /Mac OS X (\d+(?:[_.]\d+)*)/.exec(ua);
  if (m?.[1]) return `macOS ${dotted(m[1])}`;
  m = /Android (\d+(?:\.\d+)?)/.exec(ua);
  if (m?.[1]) return `Android ${m[1]}`;
  if (/\bCrOS\b/.test(ua)) return 'Chrome OS';
  if (/Linux/.test(ua)) return 'Linux';
  return undefined;
}

function deviceOf(ua: string, touchPoints: number): DeviceType {
  if (/bot|crawl|spider|slurp|facebookexternalhit/i.test(ua)) return 'bot';
  if (
    /iPad|Tablet|PlayBook|Silk|Kindle/.test(ua) ||
    (/Android/.test(ua) && !/Mobile/.test(ua)) ||
    (/Macintosh/.test(ua) && touchPoints > 1)
  )
    return 'tablet';
  if (/Mobi|iPhone|iPod|Android|Windows Phone/.test(ua)) return 'mobile';
  return 'desktop';
}

/**
 * A small user-agent parser: the browser, OS and device class that reports group by. It knows
 * the common browsers only; anything else leaves `browser` or `os` out rather than guessing.
 * `touchPoints` is `navigator.maxTouchPoints`.
 */
export function parseUserAgent(ua: string, touchPoints = 0): UserAgentInfo {
  const info: UserAgentInfo = { device: deviceOf(ua, touchPoints) };
  for (const [pattern, name] of browsers) {
    const m = pattern.exec(ua);
    if (m?.[1]) {
      info.browser = `${name} ${m[1]}`;
      break;
    }
  }
  const os = osOf(ua, touchPoints);
  if (os) info.os = os;
  return info;
}
