import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { isCollectRequest, requestFacts } from './collect-endpoint';

function incoming(
  method: string | undefined,
  url: string | undefined,
  headers: IncomingMessage['headers'] = {},
) {
  const req = new IncomingMessage(new Socket());
  // An IncomingMessage's method and url may be unset; the routes must not mistake it for theirs.
  req.method = method;
  req.url = url;
  req.headers = headers;
  return req;
}

describe('isCollectRequest', () => {
  it.each(['/collect', '/collect/', '/collect?v=1'])('answers POST %s', (url) => {
    expect(isCollectRequest(incoming('POST', url))).toBe(true);
  });

  it.each([
    ['GET', '/collect'],
    ['OPTIONS', '/collect'],
    ['POST', '/collector'],
    ['POST', '/collect/x'],
    ['POST', '/v1/collect'],
    ['POST', '/'],
    ['POST', ''],
    ['POST', undefined],
    [undefined, '/collect'],
  ])('leaves %s %s to the other routes', (method, url) => {
    expect(isCollectRequest(incoming(method, url))).toBe(false);
  });
});

describe('requestFacts', () => {
  it('records the headers, the client address, user agent and origin, and when it arrived', () => {
    const headers = { 'user-agent': 'Mozilla/5.0', origin: 'https://shop.example', 'x-write-key': 'wk' };
    const req = incoming('POST', '/collect', headers);
    const before = Date.now();
    const startedBefore = performance.now();
    const facts = requestFacts(req, (r) => (r === req ? '203.0.113.9' : null));
    const startedAfter = performance.now();
    expect(facts.headers).toBe(headers);
    expect({ ip: facts.ip, userAgent: facts.userAgent, origin: facts.origin }).toEqual({
      ip: '203.0.113.9',
      userAgent: 'Mozilla/5.0',
      origin: 'https://shop.example',
    });
    expect(facts.receivedAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(facts.receivedAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(facts.startedAt).toBeGreaterThanOrEqual(startedBefore);
    expect(facts.startedAt).toBeLessThanOrEqual(startedAfter);
    expect(Object.keys(facts).sort()).toEqual([
      'headers',
      'ip',
      'origin',
      'receivedAt',
      'startedAt',
      'userAgent',
    ]);
  });

  it('records an unknown user agent, origin and address as such', () => {
    const facts = requestFacts(incoming('POST', '/collect'), () => null);
    expect({ ip: facts.ip, userAgent: facts.userAgent, origin: facts.origin }).toStrictEqual({
      ip: null,
      userAgent: null,
      origin: undefined,
    });
  });
});
