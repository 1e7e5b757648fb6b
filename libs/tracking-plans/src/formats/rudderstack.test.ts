import { checkPlan } from '../plan-check';
import { compilePlan } from '../plan-validator';
import { importRudderCliProject } from './rudderstack';

const events = `version: rudder/0.1
kind: events
metadata:
  name: app_events
spec:
  events:
    - id: product_viewed
      name: "Product Viewed"
      event_type: track
      description: "A product page was seen"
    - id: signed_up
      display_name: "User Signed Up"
      event_type: track
    - id: identify
      event_type: identify
    - id: any_page
      event_type: page
`;
const properties = `version: rudder/v0.1
kind: properties
metadata:
  name: props
spec:
  properties:
    - id: sku
      name: "product_sku"
      type: string
      description: "Stock keeping unit"
      config:
        pattern: "^SKU-[0-9]+$"
        maxLength: 20
    - id: price
      display_name: "price"
      type: number
      propConfig:
        minimum: 0
    - id: tags
      name: "tags"
      type: array
      config:
        itemTypes: ["string"]
    - id: email
      name: "email"
      types: ["string", "null"]
    - id: plan
      name: "plan"
      type: string
      config:
        enum: [free, pro]
    - id: address
      name: "address"
      type: object
    - id: city
      name: "city"
      type: string
`;
const tp = `version: rudder/0.1
kind: tp
metadata:
  name: main
spec:
  id: main
  display_name: "Main plan"
  rules:
    - type: event_rule
      id: viewed
      event:
        $ref: "#/events/app_events/product_viewed"
      allow_unplanned: false
      properties:
        - $ref: "#/properties/props/sku"
          required: true
        - $ref: "#/properties/props/price"
        - $ref: "#/properties/props/tags"
        - $ref: "#/properties/props/address"
          properties:
            - $ref: "#/properties/props/city"
              required: true
    - type: event_rule
      id: signed_up
      event:
        $ref: "#events/app_events/signed_up"
        allow_unplanned: true
    - type: event_rule
      id: who
      event:
        $ref: "#/events/app_events/identify"
      properties:
        - $ref: "#/properties/props/email"
          required: true
        - $ref: "#/properties/props/plan"
    - type: event_rule
      id: pages
      event:
        $ref: "#/events/app_events/any_page"
`;

describe('importRudderCliProject', () => {
  /** Imported inside each test, so that the mutation run sees which test ran it. */
  const planOf = () => {
    const imported = importRudderCliProject([events, properties, tp]);
    if (!imported.ok) throw new Error(JSON.stringify(imported.problems));
    return imported.value;
  };

  test('maps each event rule onto the event object, required and closed as declared', () => {
    expect(planOf().rules).toEqual([
      {
        type: 'track',
        name: 'Product Viewed',
        description: 'A product page was seen',
        schema: {
          type: 'object',
          required: ['properties'],
          properties: {
            properties: {
              type: 'object',
              additionalProperties: false,
              required: ['product_sku'],
              properties: {
                product_sku: {
                  type: 'string',
                  description: 'Stock keeping unit',
                  pattern: '^SKU-[0-9]+$',
                  maxLength: 20,
                },
                price: { type: 'number', minimum: 0 },
                tags: { type: 'array', items: { type: 'string' } },
                address: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
              },
            },
          },
        },
      },
      {
        type: 'track',
        name: 'User Signed Up',
        schema: { type: 'object', properties: { properties: { type: 'object', properties: {} } } },
      },
      {
        type: 'identify',
        schema: {
          type: 'object',
          required: ['traits'],
          properties: {
            traits: {
              type: 'object',
              required: ['email'],
              properties: {
                email: { type: ['string', 'null'] },
                plan: { type: 'string', enum: ['free', 'pro'] },
              },
            },
          },
        },
      },
      {
        type: 'page',
        schema: { type: 'object', properties: { properties: { type: 'object', properties: {} } } },
      },
    ]);
  });

  test('the plan passes checkPlan and validates events as the YAML says', () => {
    const plan = planOf();
    expect(checkPlan(plan).ok).toBe(true);
    const validator = compilePlan(plan, { planId: 'p', version: 1 });
    expect(
      validator.validate({
        type: 'track',
        event: 'Product Viewed',
        properties: { product_sku: 'SKU-1', address: { city: 'Oslo' } },
      }),
    ).toEqual([]);
    expect(
      validator
        .validate({ type: 'track', event: 'Product Viewed', properties: { product_sku: 'x', extra: 1 } })
        .map((v) => [v.code, v.path]),
    ).toEqual([
      ['unplanned_property', '/properties/extra'],
      ['value_not_allowed', '/properties/product_sku'],
    ]);
    expect(validator.validate({ type: 'identify', userId: 'u' }).map((v) => [v.code, v.path])).toEqual([
      ['missing_required', '/traits'],
    ]);
  });

  test.each([
    ['no tracking plan', [events], [['invalid_input', '']]],
    ['two tracking plans', [events, properties, tp, tp], [['invalid_input', '']]],
    [
      'a rudder/v1 spec',
      [tp.replace('rudder/0.1', 'rudder/v1')],
      [
        ['not_mappable', '/0/0/version'],
        ['invalid_input', ''],
      ],
    ],
    ['not YAML', ['a: [', events, properties, tp], [['invalid_input', '/0/0']]],
    [
      'a spec without kind',
      ['version: rudder/0.1\nspec: {}', events, properties, tp],
      [['invalid_input', '/0/0']],
    ],
    [
      'an unknown kind',
      ['version: rudder/0.1\nkind: custom-types\nspec: {}', events, properties, tp],
      [['not_mappable', '/0/0/kind']],
    ],
    [
      'include_rules',
      [events, properties, tp.replace('  rules:\n', '  rules:\n    - type: include_rules\n      id: base\n')],
      [['not_mappable', '/2/0/spec/rules/0/type']],
    ],
    [
      'a reference to nothing',
      [events, properties, tp.replace('props/price', 'props/cost')],
      [['invalid_input', '/2/0/spec/rules/0/properties/1/$ref']],
    ],
    [
      'an event reference to nothing',
      [events, properties, tp.replace('app_events/identify', 'app_events/who')],
      [['invalid_input', '/2/0/spec/rules/2/event']],
    ],
    [
      'a custom type',
      [events, properties.replace('type: number', 'type: "#/custom-types/t/money"'), tp],
      [['not_mappable', '/1/0/spec/properties/1/type']],
    ],
    [
      'a config keyword without equivalent',
      [events, properties.replace('minimum: 0', 'minimum: 0\n        exclusive: true'), tp],
      [['not_mappable', '/1/0/spec/properties/1/propConfig/exclusive']],
    ],
    [
      'variants',
      [events, properties, tp.replace('      id: who\n', '      id: who\n      variants: []\n')],
      [['not_mappable', '/2/0/spec/rules/2/variants']],
    ],
    [
      'an alias event type',
      [events.replace('event_type: page', 'event_type: alias'), properties, tp],
      [['not_mappable', '/0/0/spec/events/3/event_type']],
    ],
  ])('refuses %s, naming it', (_label, files, expected) => {
    const result = importRudderCliProject(files);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.map((p) => [p.code, p.path])).toEqual(expected);
  });
});
