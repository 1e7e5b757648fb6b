import fc from 'fast-check';
import {
  checkPolicy,
  classOfViolation,
  decideEvent,
  omitPaths,
  omittablePath,
  planActionOf,
  type PlanPolicy,
} from './plan-policy';
import { violationCodes, type Violation, type ViolationCode } from './plan-validator';

const v = (code: ViolationCode, path: string): Violation => ({ code, path, keyword: 'k', message: 'm' });

describe('classOfViolation', () => {
  it('puts type and value failures in one class and acts on no notice', () => {
    expect(violationCodes.map((code) => [code, classOfViolation(code)])).toEqual([
      ['unplanned_event', 'unplanned_event'],
      ['unplanned_property', 'unplanned_property'],
      ['missing_required', 'missing_required'],
      ['type_mismatch', 'wrong_value'],
      ['value_not_allowed', 'wrong_value'],
      ['common_schema', 'common_schema'],
      ['unknown_pinned_version', null],
    ]);
  });
});

describe('checkPolicy', () => {
  it('accepts every class with each action it allows', () => {
    expect(
      checkPolicy({
        actions: {
          unplanned_event: 'quarantine',
          unplanned_property: 'omit',
          missing_required: 'allow',
          wrong_value: 'omit',
          common_schema: 'omit',
        },
        destinations: { warehouse: { unplanned_event: 'allow' }, 'int-1': {} },
      }),
    ).toEqual([]);
    expect(checkPolicy({ actions: {} })).toEqual([]);
  });

  it('names each problem by its pointer', () => {
    expect(checkPolicy(null)).toEqual([{ path: '', message: 'must be an object' }]);
    expect(checkPolicy([])).toEqual([{ path: '', message: 'must be an object' }]);
    expect(
      checkPolicy({
        actions: { unplanned_event: 'omit', missing_required: 'omit', wrong_value: 'drop', 'a/b~': 'allow' },
        destinations: { '': {}, x: 'allow', ['d'.repeat(65)]: { common_schema: 'block' }, 'a\u0000b': {} },
        extra: 1,
      }),
    ).toEqual([
      { path: '/extra', message: 'is not a policy field' },
      { path: '/actions/unplanned_event', message: 'omit strips a value, and unplanned_event names none' },
      { path: '/actions/missing_required', message: 'omit strips a value, and missing_required names none' },
      { path: '/actions/wrong_value', message: 'must be one of allow, omit, quarantine' },
      {
        path: '/actions/a~1b~0',
        message:
          'is not a violation class (unplanned_event, unplanned_property, missing_required, wrong_value, common_schema)',
      },
      {
        path: '/destinations/',
        message: 'a destination is an integration id or warehouse: 1 to 64 of A-Z a-z 0-9 _ - . :',
      },
      { path: '/destinations/x', message: 'must be an object of actions by violation class' },
      {
        path: `/destinations/${'d'.repeat(65)}`,
        message: 'a destination is an integration id or warehouse: 1 to 64 of A-Z a-z 0-9 _ - . :',
      },
      {
        path: `/destinations/${'d'.repeat(65)}/common_schema`,
        message: 'must be one of allow, omit, quarantine',
      },
      {
        path: '/destinations/a\u0000b',
        message: 'a destination is an integration id or warehouse: 1 to 64 of A-Z a-z 0-9 _ - . :',
      },
    ]);
    expect(checkPolicy({})).toEqual([
      { path: '/actions', message: 'must be an object of actions by violation class' },
    ]);
    expect(checkPolicy({ actions: {}, destinations: [] })).toEqual([
      { path: '/destinations', message: 'must be an object of actions by destination' },
    ]);
  });

  it('caps the destinations a policy names', () => {
    const destinations = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`d${i}`, { wrong_value: 'allow' }]));
    expect(checkPolicy({ actions: {}, destinations: destinations(100) })).toEqual([]);
    expect(checkPolicy({ actions: {}, destinations: destinations(101) })).toEqual([
      { path: '/destinations', message: 'at most 100 destinations' },
    ]);
  });
});

describe('omittablePath', () => {
  it.each([
    ['/properties/price', '/properties/price'],
    ['/traits/email', '/traits/email'],
    ['/context/traits/email', '/context/traits/email'],
    ['/properties/items/2/price', '/properties/items/2/price'],
    ['/properties/tags/2', '/properties/tags'],
    ['/properties/matrix/0/1', '/properties/matrix'],
    ['/properties/a~1b/c~0d', '/properties/a~1b/c~0d'],
    ['/context/page/url', '/context/page/url'],
    ['/properties/protocols', '/properties/protocols'],
    ['/traits/consent/x', '/traits/consent/x'],
  ])('strips %s as %s', (path, stripped) => {
    expect(omittablePath(path)).toBe(stripped);
  });

  it.each([
    [''],
    ['/properties'],
    ['/traits'],
    ['/userId'],
    ['/event'],
    ['/messageId'],
    ['/context/protocols/event_version'],
    ['/context/ruddertyper/trackingPlanVersion'],
    ['/context/library/name'],
    ['/context/consent/categoryPreferences'],
    ['/properties/0'],
    ['properties/x'],
  ])('never strips %s', (path) => {
    expect(omittablePath(path)).toBeUndefined();
  });
});

describe('decideEvent', () => {
  const policy: PlanPolicy = {
    actions: { unplanned_property: 'omit', wrong_value: 'omit', unplanned_event: 'quarantine' },
    destinations: {
      warehouse: { unplanned_event: 'allow', unplanned_property: 'allow' },
      braze: { wrong_value: 'quarantine' },
    },
  };

  it('allows an event without violations, and one with only notices', () => {
    expect(decideEvent([], policy, 'x')).toEqual({ action: 'allow', omitted: [] });
    expect(
      decideEvent([v('unknown_pinned_version', '/context/protocols/event_version')], policy, 'x'),
    ).toEqual({
      action: 'allow',
      omitted: [],
    });
  });

  it('takes a class left out as allow', () => {
    expect(decideEvent([v('missing_required', '/properties/id')], policy, 'x')).toEqual({
      action: 'allow',
      omitted: [],
    });
  });

  it('strips each offending value once, in order', () => {
    expect(
      decideEvent(
        [
          v('unplanned_property', '/properties/z'),
          v('type_mismatch', '/properties/a'),
          v('value_not_allowed', '/properties/a'),
        ],
        policy,
        'amplitude',
      ),
    ).toEqual({ action: 'omit', omitted: ['/properties/a', '/properties/z'] });
  });

  it('lets a destination override a class and keep the rest', () => {
    const violations = [v('unplanned_property', '/properties/z'), v('type_mismatch', '/properties/a')];
    expect(decideEvent(violations, policy, 'warehouse')).toEqual({
      action: 'omit',
      omitted: ['/properties/a'],
    });
    expect(decideEvent(violations, policy, 'braze')).toEqual({ action: 'quarantine', omitted: [] });
    expect(decideEvent([v('unplanned_event', '/event')], policy, 'warehouse')).toEqual({
      action: 'allow',
      omitted: [],
    });
    expect(decideEvent([v('unplanned_event', '/event')], policy, 'braze')).toEqual({
      action: 'quarantine',
      omitted: [],
    });
  });

  it('quarantines under omit what cannot be stripped', () => {
    expect(decideEvent([v('type_mismatch', '/userId')], policy, 'x')).toEqual({
      action: 'quarantine',
      omitted: [],
    });
    expect(decideEvent([v('common_schema', '')], { actions: { common_schema: 'omit' } }, 'x')).toEqual({
      action: 'quarantine',
      omitted: [],
    });
  });

  it('quarantines whatever else the event would omit', () => {
    expect(
      decideEvent([v('unplanned_property', '/properties/z'), v('unplanned_event', '/event')], policy, 'x'),
    ).toEqual({ action: 'quarantine', omitted: [] });
  });
});

describe('planActionOf', () => {
  const policy: PlanPolicy = {
    actions: { unplanned_property: 'omit', missing_required: 'quarantine' },
    destinations: {
      warehouse: { missing_required: 'allow' },
      'int-amp': { unplanned_property: 'quarantine' },
    },
  };

  it('gives the action of destinations without an override, then each override’s', () => {
    const violations = [v('unplanned_property', '/properties/coupon')];
    expect(planActionOf({ violations }, policy)).toEqual({
      action: 'omit',
      omitted: ['/properties/coupon'],
      destinations: {
        warehouse: { action: 'omit', omitted: ['/properties/coupon'] },
        'int-amp': { action: 'quarantine', omitted: [] },
      },
    });
    expect(planActionOf({ violations: [v('missing_required', '/properties/id')] }, policy)).toEqual({
      action: 'quarantine',
      omitted: [],
      destinations: {
        warehouse: { action: 'allow', omitted: [] },
        'int-amp': { action: 'quarantine', omitted: [] },
      },
    });
  });

  it('names no destinations for a policy without overrides, and allows a clean event', () => {
    expect(planActionOf({ violations: [] }, { actions: policy.actions })).toEqual({
      action: 'allow',
      omitted: [],
    });
    expect(
      planActionOf({ violations: [v('unplanned_property', '/properties/z')] }, { actions: policy.actions }),
    ).toEqual({ action: 'omit', omitted: ['/properties/z'] });
  });

  it('quarantines for unlisted violations wherever a class is not allowed', () => {
    const allowing: PlanPolicy = {
      actions: { unplanned_property: 'omit' },
      destinations: {
        warehouse: {
          unplanned_event: 'allow',
          unplanned_property: 'allow',
          missing_required: 'allow',
          wrong_value: 'allow',
          common_schema: 'allow',
        },
      },
    };
    expect(
      planActionOf({ violations: [v('unplanned_property', '/properties/z')], unlisted: 2 }, allowing),
    ).toEqual({
      action: 'quarantine',
      omitted: [],
      destinations: { warehouse: { action: 'allow', omitted: [] } },
    });
  });
});

describe('omitPaths', () => {
  it('strips the members at the paths and leaves the event as it was', () => {
    const event = Object.freeze({
      type: 'track',
      event: 'E',
      properties: Object.freeze({ a: 1, b: Object.freeze({ c: 2, d: 3 }), 'x/y': 4 }),
      context: Object.freeze({ page: Object.freeze({ url: 'u' }) }),
    });
    const out = omitPaths(event, [
      '/properties/a',
      '/properties/b/c',
      '/properties/x~1y',
      '/properties/absent',
    ]);
    expect(out).toEqual({
      type: 'track',
      event: 'E',
      properties: { b: { d: 3 } },
      context: { page: { url: 'u' } },
    });
    expect(out.context).toBe(event.context);
    expect(event.properties).toEqual({ a: 1, b: { c: 2, d: 3 }, 'x/y': 4 });
  });

  it('returns the event itself when nothing is stripped', () => {
    const event = { type: 'track' };
    expect(omitPaths(event, [])).toBe(event);
  });

  it('does not follow a path through a value that is not an object', () => {
    const event = { properties: { a: [1, { b: 2 }], s: 'text' } };
    expect(omitPaths(event, ['/properties/a/1/b', '/properties/s/length', '/nothing/here'])).toEqual(event);
  });

  it('strips own members only, __proto__ included, and never the prototype', () => {
    const event = JSON.parse('{"properties":{"__proto__":{"polluted":1},"constructor":2}}') as Record<
      string,
      unknown
    >;
    const out = omitPaths(event, [
      '/properties/__proto__',
      '/properties/constructor',
      '/properties/toString',
    ]);
    expect(Object.keys(out.properties as object)).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('leaves no stripped member anywhere, whatever the keys', () => {
    const key = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(
        fc.dictionary(key, fc.dictionary(key, fc.integer())),
        fc.array(fc.tuple(key, key)),
        (props, picks) => {
          const event = JSON.parse(JSON.stringify({ properties: props })) as {
            properties: Record<string, Record<string, number>>;
          };
          const before = JSON.stringify(event);
          const paths = picks.map(
            ([a, b]) =>
              `/properties/${a.replace(/~/g, '~0').replace(/\//g, '~1')}/${b.replace(/~/g, '~0').replace(/\//g, '~1')}`,
          );
          const out = omitPaths(event, paths);
          expect(JSON.stringify(event)).toBe(before);
          for (const [a, b] of picks) {
            const inner = Object.prototype.hasOwnProperty.call(out.properties, a)
              ? out.properties[a]
              : undefined;
            if (inner && typeof inner === 'object')
              expect(Object.prototype.hasOwnProperty.call(inner, b)).toBe(false);
          }
          for (const [a, inner] of Object.entries(props))
            for (const b of Object.keys(inner))
              if (!picks.some(([pa, pb]) => pa === a && pb === b))
                expect(out.properties[a]?.[b]).toBe(inner[b]);
        },
      ),
    );
  });
});
