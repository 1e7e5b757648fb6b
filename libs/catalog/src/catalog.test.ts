import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { consentGroupFor, destinationCategories, segmentDestinationNames } from '@pipeline/events';
import { lookAlikeCredentials } from '@pipeline/destinations/testing';
import Ajv from 'ajv';
import { fields, secret, text } from './app-type';
import {
  appCatalog,
  appTypeDefinition,
  appTypes,
  baseUrlAppTypes,
  consentGroupOfAppType,
  deliveryKinds,
  destinationCategoryOf,
  forwarderFor,
  forwardingAppTypes,
  importingAppTypes,
  importTasksOf,
  isDeliveryKind,
  rolesOfAppType,
} from './catalog';

const repo = path.resolve(__dirname, '../../..');
const ajv = new Ajv({ allErrors: true, strict: true });

describe('the app catalog', () => {
  it('has one definition per app type, each with a name and a description', () => {
    expect(new Set(appTypes).size).toBe(appCatalog.length);
    for (const definition of appCatalog) {
      expect(definition.appType).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(definition.name.length).toBeGreaterThan(1);
      expect(definition.description.length).toBeGreaterThan(20);
      expect(appTypeDefinition(definition.appType)).toBe(definition);
    }
    expect(appTypeDefinition('toString')).toBeUndefined();
    expect(appTypeDefinition('hubspot ')).toBeUndefined();
  });

  it('every app type works as something: a tracking source, an import or a destination', () => {
    for (const definition of appCatalog) {
      expect(rolesOfAppType(definition.appType).length).toBeGreaterThan(0);
      // An import with no streams would offer a source that syncs nothing.
      if (definition.imports) expect(definition.imports.streams.length).toBeGreaterThan(0);
    }
    expect(rolesOfAppType('web_tracking')).toEqual(['source']);
    expect(rolesOfAppType('stripe')).toEqual(['source']);
    expect(rolesOfAppType('braze')).toEqual(['destination']);
    expect(rolesOfAppType('nope')).toEqual([]);
    expect(importTasksOf('stripe')).toEqual(['customers', 'charges', 'invoices', 'subscriptions']);
    expect(importTasksOf('shopify')).toEqual(['orders', 'customers', 'products']);
    expect(importTasksOf('web_tracking')).toEqual([]);
  });

  it('answers lookups of unknown app types with nothing, never a throw', () => {
    expect(importTasksOf('nope')).toEqual([]);
    expect(destinationCategoryOf('nope')).toBeUndefined();
    expect(destinationCategoryOf('stripe')).toBeUndefined();
    expect(destinationCategoryOf('braze')).toBe('messaging');
    expect(destinationCategoryOf('google_ads')).toBe('advertising');
    expect(consentGroupOfAppType('nope')).toBeNull();
    expect(isDeliveryKind('warehouse')).toBe(true);
    expect(isDeliveryKind('meta_conversions')).toBe(true);
    expect(isDeliveryKind('stripe')).toBe(false);
    expect(forwarderFor('nope')).toBeUndefined();
    expect(forwarderFor('amplitude', {})?.appType).toBe('amplitude');
  });

  it('builds schema fields with bounded lengths, their description and pattern', () => {
    expect(secret('The key.')).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      writeOnly: true,
      description: 'The key.',
    });
    expect(secret('k', { pattern: '^sk_', maxLength: 99 })).toMatchObject({ pattern: '^sk_', maxLength: 99 });
    expect(secret('k')).not.toHaveProperty('pattern');
    expect(text('A name.')).toMatchObject({
      type: 'string',
      minLength: 1,
      maxLength: 1024,
      description: 'A name.',
    });
    expect(text('x', { maxLength: 7, pattern: '^a' })).toMatchObject({ maxLength: 7, pattern: '^a' });
    expect(text('x')).not.toHaveProperty('writeOnly');
    expect(fields({}, 'Settings.')).toMatchObject({
      type: 'object',
      additionalProperties: false,
      description: 'Settings.',
    });
    expect(fields({})).not.toHaveProperty('description');
  });

  it('gives every destination a category whose consent group is decided', () => {
    for (const appType of forwardingAppTypes) {
      const category = appTypeDefinition(appType)!.forwards!.category;
      expect(destinationCategories).toContain(category);
      expect(consentGroupOfAppType(appType)).toBe(consentGroupFor[category]);
    }
    expect(consentGroupOfAppType('amplitude')).toBe('analytics');
    expect(consentGroupOfAppType('braze')).toBe('marketing');
    expect(consentGroupOfAppType('onesignal')).toBe('marketing');
    expect(consentGroupOfAppType('webhook')).toBeNull();
    expect(consentGroupOfAppType('stripe')).toBeNull();
  });

  describe.each(appCatalog.map((d) => [d.appType, d] as const))('%s schemas', (_, definition) => {
    const credentials = ajv.compile(definition.credentials);
    const config = ajv.compile(definition.config);

    it('accept the example', () => {
      expect(credentials(definition.example.credentials)).toBe(true);
      expect(config(definition.example.config)).toBe(true);
    });

    it('refuse a field they do not name', () => {
      expect(credentials({ ...(definition.example.credentials as object), apiKeyy: 'x' })).toBe(false);
      expect(config({ ...(definition.example.config as object), regoin: 'eu' })).toBe(false);
    });

    it('refuse the example without each required credential', () => {
      const example = definition.example.credentials as Record<string, unknown>;
      for (const field of Object.keys(example)) {
        const { [field]: _dropped, ...without } = example;
        const schema = definition.credentials as { required?: string[] };
        if (schema.required?.includes(field)) expect(credentials(without)).toBe(false);
      }
    });

    it('mark every secret credential write-only', () => {
      const branches = ((definition.credentials as { anyOf?: unknown[] }).anyOf ?? [
        definition.credentials,
      ]) as {
        properties?: Record<string, { writeOnly?: boolean }>;
      }[];
      for (const branch of branches)
        for (const [name, field] of Object.entries(branch.properties ?? {}))
          if (/key|secret|token|password/i.test(name))
            expect({ name, writeOnly: field.writeOnly }).toEqual({ name, writeOnly: true });
    });
  });
});

// Every list of app types outside the catalog is derived here and compared with it: a list that
// drifts fails this test.
describe('lists of app types elsewhere match the catalog', () => {
  it('the delivery manifests: one Deployment file per delivery kind, each in the kustomization', () => {
    const files = readdirSync(path.join(repo, 'deploy/base/delivery'))
      .filter((file) => file.endsWith('.yaml') && file !== 'pdb.yaml')
      .map((file) => file.replace(/\.yaml$/, ''));
    expect(files.sort()).toEqual([...deliveryKinds].sort());
    const kustomization = readFileSync(path.join(repo, 'deploy/base/kustomization.yaml'), 'utf8');
    for (const kind of deliveryKinds) expect(kustomization).toContain(`delivery/${kind}.yaml`);
  });

  it('the base URL settings in the deployed config', () => {
    const config = readFileSync(path.join(repo, 'deploy/base/config.yaml'), 'utf8');
    const set = new Set(
      [...config.matchAll(/^\s+VENDOR_BASE_URL_([A-Z0-9_]+):/gm)].map((m) => m[1]!.toLowerCase()),
    );
    expect([...set].sort()).toEqual([...baseUrlAppTypes.all].sort());
    expect(baseUrlAppTypes.forwarding.length).toBeGreaterThan(0);
    expect(baseUrlAppTypes.forwarding.filter((t) => !forwardingAppTypes.includes(t))).toEqual([]);
    expect(baseUrlAppTypes.all).not.toContain('webhook');
  });

  it('the vendor look-alikes used by the tests', () => {
    expect(Object.keys(lookAlikeCredentials).sort()).toEqual([...forwardingAppTypes].sort());
  });

  it('the Segment integration names events may name destinations by', () => {
    expect(Object.keys(segmentDestinationNames).sort()).toEqual([...forwardingAppTypes].sort());
  });

  it('the delivery kinds list derives forwarding and importing types from the definitions', () => {
    expect(deliveryKinds).toEqual([
      'log',
      'warehouse',
      ...appCatalog.filter((d) => d.forwards).map((d) => d.appType),
    ]);
    expect(importingAppTypes).toEqual(appCatalog.filter((d) => d.imports).map((d) => d.appType));
  });
});
