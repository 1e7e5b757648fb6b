import fc from 'fast-check';
import {
  checkEventContent,
  eventTimeRange,
  maxEventDepth,
  storableText as serverText,
} from '@pipeline/events';
import { contentRules, inTimeRange, repairContent, storableText } from './event-content';

// The bundle repeats the server's rules (it must not import libs/events' values): these keep
// the two copies in step.
describe('the SDK applies the server content rules', () => {
  it('has the same limits', () => {
    expect(contentRules).toEqual({
      maxDepth: maxEventDepth,
      minTime: eventTimeRange.min,
      maxTime: eventTimeRange.max,
    });
    expect(inTimeRange(eventTimeRange.min)).toBe(true);
    expect(inTimeRange(eventTimeRange.min - 1)).toBe(false);
    expect(inTimeRange(eventTimeRange.max)).toBe(true);
    expect(inTimeRange(eventTimeRange.max + 1)).toBe(false);
    expect(inTimeRange(Number.NaN)).toBe(false);
  });

  it('repairs every string as the server does', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        expect(storableText(text)).toBe(serverText(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('repairs whole JSON values, keys included, as the server does', () => {
    const key = fc.string({ unit: 'binary', maxLength: 6 });
    fc.assert(
      fc.property(
        fc
          .jsonValue()
          .chain(() =>
            fc.dictionary(
              key,
              fc.oneof(
                fc.string({ unit: 'binary' }),
                fc.integer(),
                fc.dictionary(key, fc.string({ unit: 'binary' })),
              ),
            ),
          ),
        (value) => {
          const server = checkEventContent(value);
          const copy = JSON.parse(JSON.stringify(value)) as unknown;
          expect(server.ok).toBe(true);
          expect(JSON.stringify(repairContent(copy))).toBe(JSON.stringify(server.ok ? server.value : null));
        },
      ),
    );
  });

  it('refuses the depth the server refuses', () => {
    let value: unknown = 1;
    for (let i = 0; i < maxEventDepth + 1; i += 1) value = [value];
    expect(() => repairContent(JSON.parse(JSON.stringify(value)))).not.toThrow();
    expect(() => repairContent([value])).toThrow(`nested more than ${maxEventDepth} levels deep`);
    expect(checkEventContent([value]).ok).toBe(false);
  });
});
