import { ATTRIBUTION_TTL_MS, lastTouch, parseAttribution, touchFromQuery } from './attribution';

describe('touchFromQuery', () => {
  it('reads utm_* parameters as the campaign and known click ids, ignoring everything else', () => {
    expect(
      touchFromQuery(
        '?utm_source=news&utm_medium=email&UTM_Campaign=spring&utm_id=42&gclid=abc&q=shoes&fbclid=fb1',
      ),
    ).toEqual({
      campaign: { utm_source: 'news', utm_medium: 'email', utm_campaign: 'spring', utm_id: '42' },
      clickId: { gclid: 'abc', fbclid: 'fb1' },
    });
  });

  it('knows the click ids of the main ad platforms, case-insensitively', () => {
    const ids = [
      'msclkid',
      'ttclid',
      'li_fat_id',
      'twclid',
      'ScCid',
      'wbraid',
      'gbraid',
      'dclid',
      'rdt_cid',
      'epik',
    ];
    const touch = touchFromQuery(`?${ids.map((id, i) => `${id}=v${i}`).join('&')}`);
    expect(Object.keys(touch.clickId ?? {})).toEqual(ids.map((id) => id.toLowerCase()));
  });

  it('decodes values, skips empty ones and truncates long ones to the context limit', () => {
    const long = 'x'.repeat(3000);
    expect(touchFromQuery(`?utm_source=a%20b&utm_medium=&gclid=${long}`)).toEqual({
      campaign: { utm_source: 'a b' },
      clickId: { gclid: 'x'.repeat(2048) },
    });
    expect(touchFromQuery('')).toEqual({});
  });
});

describe('lastTouch', () => {
  const t0 = Date.parse('2026-01-01T00:00:00Z');

  it('replaces a whole part when the URL has any of it, and keeps the other part', () => {
    const first = lastTouch(null, touchFromQuery('?utm_source=ads&utm_campaign=winter&gclid=g1'), t0);
    const second = lastTouch(first, touchFromQuery('?utm_source=newsletter'), t0 + 1000);
    expect(second).toEqual({
      campaign: { values: { utm_source: 'newsletter' }, at: t0 + 1000 },
      clickId: { values: { gclid: 'g1' }, at: t0 },
    });
  });

  it('keeps the stored touch on a URL without parameters, until the TTL is over', () => {
    const first = lastTouch(null, touchFromQuery('?utm_source=ads&fbclid=f'), t0);
    expect(lastTouch(first, {}, t0 + ATTRIBUTION_TTL_MS - 1)).toEqual(first);
    expect(lastTouch(first, {}, t0 + ATTRIBUTION_TTL_MS)).toEqual({});
  });

  it('survives storage: parse reads back what was stored and refuses anything malformed', () => {
    const stored = lastTouch(null, touchFromQuery('?utm_medium=cpc&gclid=g'), t0);
    expect(parseAttribution(JSON.stringify(stored))).toEqual(stored);
    expect(parseAttribution('not json')).toBeNull();
    expect(parseAttribution(null)).toBeNull();
    expect(parseAttribution(JSON.stringify({ campaign: { values: { a: 1 }, at: t0 } }))).toEqual({});
  });
});
