import { bySeverity, summarize, type Finding, type TaskTemplate } from './template';

export type NamingConvention = 'snake_case' | 'camelCase' | 'Title Case' | 'any';

export interface TrackingPlanParams {
  /** The window: events whose time is within the last `days` days. */
  days: number;
  /** The convention event names (of track calls) and property keys are checked against. */
  naming_convention: NamingConvention;
}

interface EventSeen {
  type: string;
  name: string;
  count: number;
  firstSeen: string;
  lastSeen: string;
}

interface PropertySeen {
  type: string;
  event: string;
  property: string;
  /** JSON type (`string`, `number`, `boolean`, `object`, `array`, `null`) -> occurrences. */
  types: Record<string, number>;
}

const conventions: Record<Exclude<NamingConvention, 'any'>, RegExp> = {
  snake_case: /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/,
  camelCase: /^[a-z][a-zA-Z0-9]*$/,
  'Title Case': /^[A-Z][a-zA-Z0-9]*( [A-Z0-9][a-zA-Z0-9]*)*$/,
};

/** The start of the window: `days` whole days of 24 hours before the run's time. */
const windowStart = (now: Date, days: number): Date => new Date(now.getTime() - days * 86_400_000);

/** Names that differ only by case, spaces, dashes or underscores are the same event. */
const canonical = (name: string) => name.toLowerCase().replace(/[\s_\-.]+/g, '');

export const trackingPlanAudit: TaskTemplate<TrackingPlanParams> = {
  id: 'tracking_plan_audit',
  version: 1,
  name: 'Tracking plan audit',
  description:
    'Lists the event names and property types seen in the warehouse in the last N days, and ' +
    'reports type drift (a property seen with several types), names that break the naming ' +
    'convention and near-duplicate event names.',
  paramsSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      days: { type: 'integer', minimum: 1, maximum: 365, default: 7 },
      naming_convention: {
        type: 'string',
        enum: ['snake_case', 'camelCase', 'Title Case', 'any'],
        default: 'snake_case',
      },
    },
  },
  prerequisites: [
    {
      kind: 'integration',
      appType: 'web_tracking',
      name: 'Web tracking (browser SDK)',
      hint: 'Connect a web_tracking app (POST /api/v1/apps) and send events to /collect',
    },
    {
      kind: 'data',
      data: 'warehouse_rows',
      name: 'warehouse events',
      hint: 'No tracked events in the warehouse yet: send track or page calls first',
    },
  ],
  steps: [
    {
      id: 'collect_events',
      name: 'Collect the event names seen in the window',
      async run({ warehouses, accountId, params, now, signal }): Promise<EventSeen[] | null> {
        const { engine, account } = await warehouses.locate(accountId);
        const tables = await engine.query(account, 'existing_tables', {}, { purpose: 'model_query', signal });
        if (!tables.some((t) => t.table === 'events')) return null;
        const rows = await engine.query(
          account,
          'event_names',
          { since: windowStart(now, params.days) },
          { purpose: 'model_query', signal },
        );
        return rows.map((r) => ({
          type: r.type,
          name: r.name,
          count: r.count,
          firstSeen: r.firstSeen.toISOString(),
          lastSeen: r.lastSeen.toISOString(),
        }));
      },
    },
    {
      id: 'collect_property_types',
      name: 'Collect the property types of each event',
      async run({ warehouses, accountId, params, now, state, signal }): Promise<PropertySeen[]> {
        if (state.collect_events === null) return [];
        const { engine, account } = await warehouses.locate(accountId);
        const rows = await engine.query(
          account,
          'event_property_types',
          { since: windowStart(now, params.days) },
          { purpose: 'model_query', signal },
        );
        const byKey = new Map<string, PropertySeen>();
        for (const row of rows) {
          const key = JSON.stringify([row.type, row.event, row.property]);
          const seen = byKey.get(key) ?? {
            type: row.type,
            event: row.event,
            property: row.property,
            types: {},
          };
          seen.types[row.jsonType] = row.count;
          byKey.set(key, seen);
        }
        return [...byKey.values()];
      },
    },
    {
      id: 'analyze',
      name: 'Find type drift and naming problems',
      async run({ state, params }): Promise<Finding[]> {
        const events = (state.collect_events as EventSeen[] | null) ?? [];
        const properties = state.collect_property_types as PropertySeen[];
        const findings: Finding[] = [];
        for (const p of properties) {
          const types = Object.keys(p.types).filter((t) => t !== 'null');
          if (types.length > 1) {
            findings.push({
              severity: 'critical',
              code: 'type_drift',
              resource: { type: 'property', name: `${p.event}.${p.property}` },
              message: `"${p.property}" of "${p.event}" was sent as ${types.map((t) => `${t} (${p.types[t]})`).join(', ')}`,
              recommendation: `Send "${p.property}" with one type; fix the calls that send the minority type`,
            });
          }
        }
        if (params.naming_convention !== 'any') {
          const pattern = conventions[params.naming_convention];
          for (const e of events.filter((e) => e.type === 'track')) {
            if (!pattern.test(e.name)) {
              findings.push({
                severity: 'warning',
                code: 'event_naming',
                resource: { type: 'event', name: e.name },
                message: `The event name "${e.name}" is not ${params.naming_convention}`,
                recommendation: `Rename it in the tracking code to follow ${params.naming_convention}`,
              });
            }
          }
          const keys = new Map<string, string[]>();
          for (const p of properties) {
            if (!pattern.test(p.property)) keys.set(p.property, [...(keys.get(p.property) ?? []), p.event]);
          }
          for (const [property, inEvents] of keys) {
            findings.push({
              severity: 'warning',
              code: 'property_naming',
              resource: { type: 'property', name: property },
              message: `The property "${property}" (in ${inEvents.join(', ')}) is not ${params.naming_convention}`,
              recommendation: `Rename the property to follow ${params.naming_convention}`,
            });
          }
        }
        const groups = new Map<string, string[]>();
        for (const e of events.filter((e) => e.type === 'track')) {
          groups.set(canonical(e.name), [...(groups.get(canonical(e.name)) ?? []), e.name]);
        }
        for (const names of groups.values()) {
          if (names.length > 1) {
            findings.push({
              severity: 'warning',
              code: 'duplicate_event_name',
              resource: { type: 'event', name: names.join(' / ') },
              message: `These events look like one event under ${names.length} names: ${names.join(', ')}`,
              recommendation: 'Pick one name and migrate the other calls to it',
            });
          }
        }
        if (state.collect_events === null || events.length === 0) {
          findings.push({
            severity: 'warning',
            code: 'no_events',
            resource: { type: 'warehouse_table', name: 'events' },
            message: `No events in the last ${params.days} days`,
            recommendation: 'Check that the SDK is installed and that the warehouse consumer runs',
          });
        }
        return findings.sort(bySeverity);
      },
    },
    {
      id: 'write_report',
      name: 'Write the report',
      async run({ state, params, now }) {
        const events = (state.collect_events as EventSeen[] | null) ?? [];
        const properties = state.collect_property_types as PropertySeen[];
        const findings = state.analyze as Finding[];
        return {
          kind: 'tracking_plan_audit',
          generatedAt: now.toISOString(),
          windowDays: params.days,
          namingConvention: params.naming_convention,
          events: events.map((e) => ({
            ...e,
            properties: Object.fromEntries(
              properties
                .filter((p) => p.type === e.type && p.event === e.name)
                .map((p) => [p.property, p.types]),
            ),
          })),
          summary: { ...summarize(findings), events: events.length, properties: properties.length },
          findings,
        };
      },
    },
  ],
};
