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

  it('takes what exactly reaches each limit', () => {
    const units = [unit('a', 2, 30), unit('b', 1, 20), unit('c', 3, 50)];
    const { batches, oversized } = packRequests(
      units,
      { maxItems: 3, maxBodyBytes: 60, maxItemBytes: 10 },
      10,
      () => [10, 4],
    );
    expect(names(batches)).toEqual([['a', 'b'], ['c']]);
    expect(oversized).toEqual([]);
  });

  it('starts a new request for the unit that passes either limit by one', () => {
    const byCount = [unit('a', 2, 1), unit('b', 2, 1)];
    expect(names(packRequests(byCount, { maxItems: 3, maxBodyBytes: 100 }, 0).batches)).toEqual([
      ['a'],
      ['b'],
    ]);
    const byBytes = [unit('a', 1, 30), unit('b', 1, 31)];
    expect(names(packRequests(byBytes, { maxItems: 9, maxBodyBytes: 60 }, 0).batches)).toEqual([
      ['a'],
      ['b'],
    ]);
    expect(names(packRequests([unit('a', 1, 61)], { maxItems: 9, maxBodyBytes: 60 }, 0).batches)).toEqual([]);
  });

  it('counts a new request from zero after starting it', () => {
    const units = ['a', 'b', 'c', 'd', 'e', 'f'].map((name) => unit(name, 1, 10));
    expect(names(packRequests(units, { maxItems: 9, maxBodyBytes: 25 }, 0).batches)).toEqual([
      ['a', 'b'],
      ['c', 'd'],
      ['e', 'f'],
    ]);
  });

  it('packs nothing from nothing, and ignores item sizes without a per-item limit', () => {
    expect(packRequests([], { maxItems: 3, maxBodyBytes: 100 }, 0)).toEqual({ batches: [], oversized: [] });
    const { batches, oversized } = packRequests(
      [unit('a', 1, 10)],
      { maxItems: 3, maxBodyBytes: 100 },
      0,
      () => [5000],
    );
    expect([names(batches), oversized]).toEqual([[['a']], []]);
  });
});
