import { uuidv4 } from './uuid';

const v4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('uuidv4', () => {
  it('uses crypto.randomUUID where the page is a secure context', () => {
    expect(uuidv4({ randomUUID: () => '00000000-0000-4000-8000-000000000000' })).toBe(
      '00000000-0000-4000-8000-000000000000',
    );
  });

  it('builds a version 4 UUID from getRandomValues on plain http, and from Math.random without crypto', () => {
    const fromBytes = new Set(
      Array.from({ length: 200 }, () =>
        uuidv4({ getRandomValues: globalThis.crypto.getRandomValues.bind(globalThis.crypto) }),
      ),
    );
    const fromMath = new Set(Array.from({ length: 200 }, () => uuidv4(undefined)));
    for (const ids of [fromBytes, fromMath]) {
      expect(ids.size).toBe(200);
      for (const id of ids) expect(id).toMatch(v4);
    }
  });
});
