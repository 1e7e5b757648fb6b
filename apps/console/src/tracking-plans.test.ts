import fc from 'fast-check';
import {
  checkPolicy,
  policyActions,
  violationClasses as libraryClasses,
  type PlanPolicy as LibraryPolicy,
} from '@pipeline/tracking-plans';
import {
  actionsFor,
  exportFileName,
  parseDraft,
  policyOf,
  violationClasses,
  type OverrideChoices,
  type PolicyAction,
  type ViolationClass,
} from './tracking-plans';

// The policy form offers what the library's checkPolicy accepts, no more and no less, and sends
// exactly what was chosen: a change to the library's rules fails here before a page offers a
// choice the API refuses.

describe('the policy form against the library', () => {
  it('lists the library’s violation classes, in its order', () => {
    expect([...violationClasses]).toEqual([...libraryClasses]);
  });

  it('offers each class exactly the actions checkPolicy accepts for it', () => {
    for (const c of violationClasses) {
      const accepted = policyActions.filter(
        (action) => checkPolicy({ actions: { [c]: action } } satisfies LibraryPolicy).length === 0,
      );
      expect({ c, actions: actionsFor(c) }).toEqual({ c, actions: accepted });
    }
    expect(actionsFor('unplanned_event')).toEqual(['allow', 'quarantine']);
    expect(actionsFor('missing_required')).toEqual(['allow', 'quarantine']);
  });

  const choice = (c: ViolationClass) => fc.constantFrom<PolicyAction>(...actionsFor(c));
  const actionsArb = fc.record(
    Object.fromEntries(violationClasses.map((c) => [c, choice(c)])) as Record<
      ViolationClass,
      fc.Arbitrary<PolicyAction>
    >,
  );
  const overrideArb = fc.record(
    Object.fromEntries(violationClasses.map((c) => [c, fc.option(choice(c), { nil: '' })])) as Record<
      ViolationClass,
      fc.Arbitrary<PolicyAction | ''>
    >,
  ) as fc.Arbitrary<OverrideChoices>;

  it('sends every default written out and only the overridden classes, and checkPolicy accepts it', () => {
    fc.assert(
      fc.property(
        actionsArb,
        fc.uniqueArray(
          fc.record({ destination: fc.constantFrom('warehouse', 'a', 'b'), choices: overrideArb }),
          {
            selector: (o) => o.destination,
            maxLength: 3,
          },
        ),
        (actions, overrides) => {
          const policy = policyOf(actions, overrides);
          expect(policy.actions).toEqual(actions);
          if (overrides.length === 0) expect(policy.destinations).toBeUndefined();
          for (const { destination, choices } of overrides)
            expect(policy.destinations?.[destination]).toEqual(
              Object.fromEntries(Object.entries(choices).filter(([, a]) => a !== '')),
            );
          expect(checkPolicy(policy)).toEqual([]);
        },
      ),
    );
  });
});

describe('the draft editor and the export', () => {
  it('reads any JSON typed, and says why when it is not JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const parsed = parseDraft(JSON.stringify(value, null, 2));
        expect(parsed).toEqual({ ok: true, value: JSON.parse(JSON.stringify(value)) });
      }),
    );
    const broken = parseDraft('{ "rules": [');
    expect(broken.ok).toBe(false);
    expect(!broken.ok && broken.message).toMatch(/^not JSON: /);
  });

  it('names the export file from the plan name in safe characters', () => {
    expect(exportFileName('Checkout flow', 3)).toBe('Checkout-flow-v3.segment.json');
    expect(exportFileName('Café / Orders', 1)).toBe('Cafe-Orders-v1.segment.json');
    expect(exportFileName('😀', 2)).toBe('tracking-plan-v2.segment.json');
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.integer({ min: 1, max: 1000 }), (name, version) => {
        expect(exportFileName(name, version)).toMatch(/^[A-Za-z0-9._-]{1,80}-v[0-9]+\.segment\.json$/);
      }),
    );
  });
});
