import { parseDeliveryArgs } from './cli';

describe('delivery CLI', () => {
  const quiet = { writeErr: () => undefined };

  it('accepts a known destination kind', () => {
    expect(parseDeliveryArgs(['--destination', 'log'], quiet)).toEqual({ destination: 'log' });
    expect(parseDeliveryArgs(['-d', 'log'], quiet)).toEqual({ destination: 'log' });
  });

  it('rejects an unknown kind, naming the valid ones', () => {
    const errors: string[] = [];
    expect(() =>
      parseDeliveryArgs(['--destination', 'nowhere'], { writeErr: (t) => errors.push(t) }),
    ).toThrow();
    expect(errors.join('')).toMatch(/expected one of log, warehouse/);
  });

  it('requires --destination', () => {
    const errors: string[] = [];
    expect(() => parseDeliveryArgs([], { writeErr: (t) => errors.push(t) })).toThrow();
    expect(errors.join('')).toMatch(/required option '-d, --destination <kind>'/);
  });
});
