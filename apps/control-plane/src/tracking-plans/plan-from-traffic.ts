import type { WarehouseTableName } from '@pipeline/destinations';
import {
  checkPolicy,
  compilePlan,
  decideEvent,
  ruleVersionPin,
  WAREHOUSE_DESTINATION,
  type PlanPolicy,
  type TrackingPlan,
} from '@pipeline/tracking-plans';
import { conflict, invalidField, unprocessable } from '../http/api-errors';
import { requireId } from '../http/ids';
import type { AccountWarehouses, LocatedWarehouse } from '../warehouse-access/account-warehouses';
import { inferenceCaps, inferPlan, type ProfileRow, type TrafficName } from './plan-inference';
import { callNameOf, eventOfRow } from './stored-events';
import type {
  GeneratedTrackingPlan,
  GenerateTrackingPlanBody,
  PreviewActionCounts,
  PreviewCodeCounts,
  PreviewEventView,
  PreviewSampleView,
  PreviewTrackingPlanBody,
  TrackingPlanPreview,
  TrafficWindowView,
} from './tracking-plan.dto';
import type { TrackingPlanBindings } from './tracking-plan-bindings';
import type { TrackingPlanService } from './tracking-plan.service';

/** Bounds on a preview's reading: rows come to the control plane to be checked one by one. */
export const previewCaps = {
  /** Distinct (type, name) pairs read per table: the most frequent. */
  maxNames: 200,
  /** Latest rows checked per name. */
  rowsPerName: 500,
  /** Rows checked per table (an event is at most 32 KiB: 5,000 rows stay under 160 MiB). */
  rowsPerTable: 5_000,
  /** Sample violations in the answer. */
  samples: 20,
} as const;

export const defaultTrafficDays = 7;

/** The tables a plan's rules reach: track, page and screen in events, then identify, group, alias. */
const generatedTables: readonly WarehouseTableName[] = ['events', 'users', 'groups'];
const previewTables: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];

const allowEverything: PlanPolicy = { actions: {} };

function windowOf(days: number | undefined, now: Date): TrafficWindowView & { start: Date } {
  const n = days ?? defaultTrafficDays;
  // tsoa checks the body; this guards a caller that bypasses it (and documents the range).
  if (!Number.isInteger(n) || n < 1 || n > 90)
    throw invalidField('body.days', 'must be an integer from 1 to 90');
  const start = new Date(now.getTime() - n * 86_400_000);
  return { days: n, since: start.toISOString(), until: now.toISOString(), start };
}

const emptyActions = (): PreviewActionCounts => ({ allow: 0, omit: 0, quarantine: 0 });

/**
 * Tracking plans from an account's warehouse (docs/tracking-plans.md, "Plans from traffic"): a
 * draft inferred from the last N days, and a preview of what a version or the draft would have
 * done to them. Both only read; the warehouse does the counting (named queries of the engine).
 */
export class PlanFromTraffic {
  constructor(
    private readonly warehouses: AccountWarehouses,
    private readonly plans: TrackingPlanService,
    private readonly bindings: TrackingPlanBindings,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Creates a plan whose draft is inferred from the window; nothing is published. */
  async generate(accountId: string, body: GenerateTrackingPlanBody): Promise<GeneratedTrackingPlan> {
    const window = windowOf(body.days, this.now());
    const requiredRatio = body.requiredRatio ?? 1;
    if (!(requiredRatio > 0 && requiredRatio <= 1))
      throw invalidField('body.requiredRatio', 'must be more than 0 and at most 1');
    const maxEnumValues = body.maxEnumValues ?? 10;
    if (!Number.isInteger(maxEnumValues) || maxEnumValues < 0 || maxEnumValues > inferenceCaps.maxEnumValues)
      throw invalidField('body.maxEnumValues', `must be an integer from 0 to ${inferenceCaps.maxEnumValues}`);
    const located = await this.locate(accountId);
    const names: TrafficName[] = [];
    const profile: ProfileRow[] = [];
    const truncated = { names: false, profile: false };
    for (const table of generatedTables) {
      const tableNames = await located.engine.query(
        located.account,
        'traffic_names',
        { table, since: window.start, maxNames: inferenceCaps.maxNames },
        { purpose: 'query' },
      );
      if (tableNames.length === 0) continue;
      truncated.names ||= (tableNames[0]?.distinctNames ?? 0) > tableNames.length;
      names.push(...tableNames);
      const rows = await located.engine.query(
        located.account,
        'traffic_profile',
        {
          table,
          since: window.start,
          maxNames: inferenceCaps.maxNames,
          perName: inferenceCaps.rowsPerName,
          maxValues: maxEnumValues,
          // A bound in the database (code points); the rule is inferenceCaps' (UTF-16 units).
          maxValueLength: inferenceCaps.maxEnumValueLength,
          maxRows: inferenceCaps.maxProfileRows,
        },
        { purpose: 'query' },
      );
      truncated.profile ||= rows.length >= inferenceCaps.maxProfileRows;
      profile.push(...rows);
    }
    const inference = inferPlan(names, profile, {
      requiredRatio,
      maxEnumValues,
      rowsPerName: inferenceCaps.rowsPerName,
    });
    const plan = await this.plans.create(accountId, {
      name: body.name,
      description: body.description ?? `Generated from the ${window.days} days to ${window.until}`,
      plan: inference.plan as unknown as Record<string, unknown>,
    });
    const { start: _start, ...shown } = window;
    void _start;
    return { plan, window: shown, rules: inference.rules, flagged: inference.flagged, truncated };
  }

  /** What the plan (a version, or its draft) would have done to the window's stored calls. */
  async preview(
    accountId: string,
    planId: string,
    body: PreviewTrackingPlanBody,
  ): Promise<TrackingPlanPreview> {
    const window = windowOf(body.days, this.now());
    if (body.version !== undefined && (!Number.isInteger(body.version) || body.version < 1))
      throw invalidField('body.version', 'must be an integer of 1 or more');
    // The plan first: another account's plan is a 404 before anything else is looked at.
    const draft = await this.plans.get(accountId, planId);
    const plan: TrackingPlan =
      body.version === undefined
        ? draft.draft
        : (await this.plans.version(accountId, planId, body.version)).plan;
    const { policy, policySource } = await this.policyOf(accountId, body);
    const located = await this.locate(accountId);
    const compiled = compilePlan(plan, { planId: draft.id, version: body.version ?? 0 });

    const totals = { observed: 0, checked: 0, withViolations: 0 };
    const actions = emptyActions();
    const codes: PreviewCodeCounts = {};
    const events: PreviewEventView[] = [];
    const samples: PreviewSampleView[] = [];
    for (const table of previewTables) {
      const tableNames = await located.engine.query(
        located.account,
        'traffic_names',
        { table, since: window.start, maxNames: previewCaps.maxNames },
        { purpose: 'query' },
      );
      if (tableNames.length === 0) continue;
      const byName = new Map<string, PreviewEventView>();
      for (const seen of tableNames) {
        const view: PreviewEventView = {
          type: seen.type as PreviewEventView['type'],
          name: seen.name,
          observed: seen.count,
          checked: 0,
          withViolations: 0,
          actions: emptyActions(),
          codes: {},
        };
        byName.set(JSON.stringify([seen.type, seen.name]), view);
        events.push(view);
        totals.observed += seen.count;
      }
      const rows = await located.engine.query(
        located.account,
        'traffic_rows',
        {
          table,
          since: window.start,
          maxNames: previewCaps.maxNames,
          perName: previewCaps.rowsPerName,
          maxRows: previewCaps.rowsPerTable,
        },
        { purpose: 'query' },
      );
      for (const { row } of rows) {
        const event = eventOfRow(table, row);
        const name = callNameOf(event);
        const violations = compiled.validate(event, ruleVersionPin(event));
        const decision = decideEvent(violations, policy, WAREHOUSE_DESTINATION);
        const view = byName.get(JSON.stringify([event.type, name]));
        totals.checked += 1;
        actions[decision.action] += 1;
        if (view) {
          view.checked += 1;
          view.actions[decision.action] += 1;
        }
        if (violations.length === 0) continue;
        totals.withViolations += 1;
        if (view) view.withViolations += 1;
        for (const violation of violations) {
          codes[violation.code] = (codes[violation.code] ?? 0) + 1;
          if (view) view.codes[violation.code] = (view.codes[violation.code] ?? 0) + 1;
        }
        if (samples.length < previewCaps.samples)
          samples.push({
            messageId: String(event.messageId),
            type: String(event.type),
            name,
            action: decision.action,
            omitted: decision.omitted,
            violations: violations.map((v) => ({ ...v })),
          });
      }
    }
    const { start: _start, ...shown } = window;
    void _start;
    return {
      planId: draft.id,
      version: body.version ?? null,
      window: shown,
      policySource,
      policy,
      ...totals,
      actions,
      codes,
      events,
      samples,
    };
  }

  private async policyOf(
    accountId: string,
    body: PreviewTrackingPlanBody,
  ): Promise<{ policy: PlanPolicy; policySource: TrackingPlanPreview['policySource'] }> {
    if (body.policy !== undefined) {
      const problems = checkPolicy(body.policy);
      if (problems.length > 0)
        throw unprocessable(
          'invalid_policy',
          `The policy is not valid: ${problems.length} problem(s); each is named in errors[] with a JSON Pointer into the policy`,
          problems,
        );
      return { policy: body.policy as unknown as PlanPolicy, policySource: 'body' };
    }
    if (body.writeKeyId !== undefined) {
      const binding = await this.bindings.get(accountId, requireId('write key', body.writeKeyId));
      return { policy: binding.policy, policySource: 'binding' };
    }
    return { policy: allowEverything, policySource: 'default' };
  }

  /** The account's warehouse; 409 `warehouse_engine_unsupported` when it is ClickHouse. */
  private async locate(accountId: string): Promise<LocatedWarehouse> {
    const located = await this.warehouses.locate(accountId);
    if (located.engine.engine !== 'postgres')
      throw conflict(
        'warehouse_engine_unsupported',
        `Plans from traffic read PostgreSQL warehouses; this account's warehouse is ${located.engine.engine}`,
      );
    return located;
  }
}
