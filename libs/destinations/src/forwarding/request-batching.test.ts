import { packRequests } from './request-batching';

const unit = (name: string, itemCount: number, bytes: number) => ({ name, itemCount, bytes });
const names = (batches: { name: string }[][]) => batches.map((batch) => batch.map((u) => u.name));

describe('packRequests', () => {
  it('fills requests in order up to the item count', () => {
    const units = ['a', 'b', 'c', 'd', 'e'].map((name) => unit(name, 1, 10));
    const { batches, oversized } = packRequests(units, { maxItems: 2, maxBodyBytes: 1000 }, 0);
    expect(names(batches)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(oversized).toEqual([]);
  });

  it('counts the envelope against the body limit', () => {
    const units = ['a', 'b', 'c'].map((name) => unit(name, 1, 40));
    expect(names(packRequests(units, { maxItems: 10, maxBodyBytes: 100 }, 20).batches)).toEqual([
      ['a', 'b'],
      ['c'],
    ]);
    expect(names(packRequests(units, { maxItems: 10, maxBodyBytes: 100 }, 21).batches)).toEqual([
      ['a'],
      ['b'],
      ['c'],
    ]);
  });

  it('keeps a unit’s items in one request, starting a new one when they do not fit', () => {
    const units = [unit('a', 2, 10), unit('b', 2, 10), unit('c', 1, 10)];
    expect(names(packRequests(units, { maxItems: 3, maxBodyBytes: 1000 }, 0).batches)).toEqual([
      ['a'],
      ['b', 'c'],
    ]);
  });

  it('sets apart what cannot fit any request, with why, and packs the rest', () => {
    const units = [unit('a', 1, 10), unit('big', 1, 500), unit('many', 5, 10), unit('b', 1, 10)];
    const { batches, oversized } = packRequests(units, { maxItems: 3, maxBodyBytes: 100 }, 0);
    expect(names(batches)).toEqual([['a', 'b']]);
    expect(oversized.map((o) => [o.unit.name, o.why])).toEqual([
      ['big', '500 bytes exceed 100 per request'],
      ['many', '5 items exceed 3 per request'],
    ]);
  });

  it('applies a per-item byte limit', () => {
    const units = [unit('a', 1, 10), unit('b', 1, 10)];
    const { batches, oversized } = packRequests(
      units,
      { maxItems: 3, maxBodyBytes: 100, maxItemBytes: 8 },
      0,
      (u) => (u.name === 'b' ? [9] : [8]),
    );
    expect(names(batches)).toEqual([['a']]);
    expect(oversized.map((o) => o.why)).toEqual(['an item of 9 bytes exceeds 8']);
  });
});
