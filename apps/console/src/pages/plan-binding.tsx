import { useState } from 'preact/hooks';
import { Allowed, useAccess } from '../access';
import { ApiError, call, client } from '../api';
import { attempt } from '../field-errors';
import type { components } from '../generated/openapi';
import {
  actionsFor,
  classLabels,
  policyOf,
  problemsOf,
  violationClasses,
  type OverrideChoices,
  type PolicyAction,
  type PolicyActions,
  type ViolationClass,
} from '../tracking-plans';
import { ErrorNotice, Show, Time, useLoad } from '../ui';
import { ProblemList } from './tracking-plans';

type Binding = components['schemas']['TrackingPlanBindingView'];
type PlanSummary = components['schemas']['TrackingPlanSummary'];

/** A destination a policy may name: the warehouse, or one of the account's integrations by id. */
interface Destination {
  id: string;
  label: string;
}

const WAREHOUSE: Destination = { id: 'warehouse', label: 'Warehouse' };

/**
 * The write key's tracking plan (GET/PUT/DELETE /api/v1/write-keys/{id}/tracking-plan): the plan,
 * its version (latest or pinned) and the policy, bound, changed or unbound. A key without
 * tracking_plans.read sees the scope it needs instead.
 */
export function PlanBinding({ writeKeyId, active }: { writeKeyId: string; active: boolean }) {
  const { can } = useAccess();
  return (
    <section aria-labelledby="plan-binding-heading">
      <h2 id="plan-binding-heading">Tracking plan</h2>
      {can('tracking_plans.read') ? (
        <BindingLoaded writeKeyId={writeKeyId} active={active} />
      ) : (
        <p class="muted">
          Needs the scope <code>tracking_plans.read</code>.
        </p>
      )}
    </section>
  );
}

function BindingLoaded({ writeKeyId, active }: { writeKeyId: string; active: boolean }) {
  const { can } = useAccess();
  // Kept here: a change reloads the binding and makes the form anew.
  const [outcome, setOutcome] = useState<string | null>(null);
  const [loaded, reload] = useLoad(async () => {
    const path = { params: { path: { writeKeyId } } };
    const [binding, plans, destinations] = await Promise.all([
      call('read tracking plans', client.GET('/api/v1/write-keys/{writeKeyId}/tracking-plan', path)).then(
        (answer) => answer.data,
        (error: unknown) => {
          if (error instanceof ApiError && error.problem.code === 'tracking_plan_binding_not_found')
            return null;
          throw error;
        },
      ),
      call(
        'read tracking plans',
        client.GET('/api/v1/tracking-plans', { params: { query: { limit: 100 } } }),
      ),
      destinationsOf(can('integrations.read')),
    ]);
    return { binding, plans: plans.data, destinations };
  }, [writeKeyId]);
  return (
    <Show loaded={loaded}>
      {({ binding, plans, destinations }) => (
        <>
          {outcome ? (
            <p class="notice good" role="status">
              {outcome}
            </p>
          ) : null}
          <CurrentBinding binding={binding} plans={plans} destinations={destinations} />
          {active ? (
            <Allowed scope="tracking_plans.write">
              <BindForm
                key={binding?.updatedAt ?? 'none'}
                writeKeyId={writeKeyId}
                binding={binding}
                plans={plans}
                destinations={destinations}
                onChanged={(text) => {
                  setOutcome(text);
                  reload();
                }}
              />
            </Allowed>
          ) : null}
        </>
      )}
    </Show>
  );
}

/** The warehouse and, when the key may read them, the account's integrations. */
async function destinationsOf(readIntegrations: boolean): Promise<Destination[]> {
  if (!readIntegrations) return [WAREHOUSE];
  const { data } = await call(
    'read integrations',
    client.GET('/api/v1/integrations', { params: { query: { limit: 100 } } }),
  );
  return [
    WAREHOUSE,
    ...data.map((i) => ({ id: i.id, label: `${i.destinationAppName} (${i.destinationAppType})` })),
  ];
}

const labelOf = (destinations: Destination[], id: string) =>
  destinations.find((d) => d.id === id)?.label ?? id;

function CurrentBinding({
  binding,
  plans,
  destinations,
}: {
  binding: Binding | null;
  plans: PlanSummary[];
  destinations: Destination[];
}) {
  if (!binding) return <p>This key&apos;s events are held to no tracking plan.</p>;
  const plan = plans.find((p) => p.id === binding.planId);
  const overrides = Object.entries(binding.policy.destinations ?? {});
  return (
    <>
      <dl class="facts" aria-label="Current binding">
        <dt>Plan</dt>
        <dd>
          <a href={`#/tracking-plans/${binding.planId}`}>{plan?.name ?? binding.planId}</a>
        </dd>
        <dt>Version</dt>
        <dd>
          {binding.binding === 'latest'
            ? `latest (now v${binding.version}; each publish moves the key to it)`
            : `pinned to v${binding.version}`}
        </dd>
        <dt>Bound</dt>
        <dd>
          <Time at={binding.updatedAt} />
        </dd>
      </dl>
      <table class="stack policy" aria-label="Current policy">
        <thead>
          <tr>
            <th scope="col">Violation</th>
            <th scope="col">All destinations</th>
            {overrides.map(([id]) => (
              <th key={id} scope="col">
                {labelOf(destinations, id)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {violationClasses.map((c) => (
            <tr key={c}>
              <th scope="row">{classLabels[c]}</th>
              <td data-label="All destinations">
                <ActionBadge action={binding.policy.actions[c] ?? 'allow'} />
              </td>
              {overrides.map(([id, actions]) => (
                <td key={id} data-label={labelOf(destinations, id)}>
                  {actions[c] ? <ActionBadge action={actions[c]} /> : <span class="muted">as all</span>}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

const actionTone: Record<PolicyAction, string> = { allow: 'good', omit: 'warn', quarantine: 'bad' };
function ActionBadge({ action }: { action: PolicyAction }) {
  return <span class={`badge ${actionTone[action]}`}>{action}</span>;
}

interface Override {
  destination: string;
  choices: OverrideChoices;
}

const defaultsOf = (actions: PolicyActions | undefined): Record<ViolationClass, PolicyAction> =>
  Object.fromEntries(violationClasses.map((c) => [c, actions?.[c] ?? 'allow'])) as Record<
    ViolationClass,
    PolicyAction
  >;

function BindForm({
  writeKeyId,
  binding,
  plans,
  destinations,
  onChanged,
}: {
  writeKeyId: string;
  binding: Binding | null;
  plans: PlanSummary[];
  destinations: Destination[];
  onChanged: (outcome: string) => void;
}) {
  // Only a plan with a published version can be bound (409 tracking_plan_not_published).
  const published = plans.filter((p) => p.latestVersion !== null);
  const [planId, setPlanId] = useState(binding?.planId ?? published[0]?.id ?? '');
  const [version, setVersion] = useState(
    binding ? (binding.binding === 'latest' ? 'latest' : String(binding.version)) : 'latest',
  );
  const [actions, setActions] = useState(defaultsOf(binding?.policy.actions));
  const [overrides, setOverrides] = useState<Override[]>(
    Object.entries(binding?.policy.destinations ?? {}).map(([destination, choices]) => ({
      destination,
      choices,
    })),
  );
  const unused = destinations.filter((d) => !overrides.some((o) => o.destination === d.id));
  const [adding, setAdding] = useState(unused[0]?.id ?? '');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [asking, setAsking] = useState(false);
  const plan = published.find((p) => p.id === planId);
  const latest = plan?.latestVersion ?? 0;
  const versions = Array.from({ length: latest }, (_, i) => latest - i);
  const problems = problemsOf(error);
  const path = { params: { path: { writeKeyId } } };

  if (published.length === 0 && !binding)
    return (
      <p class="muted">
        No tracking plan has a published version yet: publish one on the{' '}
        <a href="#/tracking-plans">Tracking plans</a> page to bind this key to it.
      </p>
    );

  const setOverride = (destination: string, c: ViolationClass, action: PolicyAction | '') =>
    setOverrides((all) =>
      all.map((o) => (o.destination === destination ? { ...o, choices: { ...o.choices, [c]: action } } : o)),
    );

  return (
    <form
      class="stacked bind-form"
      noValidate
      aria-labelledby="bind-heading"
      onSubmit={(e) => {
        e.preventDefault();
        void attempt(setBusy, setError, async () => {
          const { data } = await call(
            'change tracking plans',
            client.PUT('/api/v1/write-keys/{writeKeyId}/tracking-plan', {
              ...path,
              body: {
                planId,
                version: version === 'latest' ? 'latest' : Number(version),
                policy: policyOf(actions, overrides) as components['schemas']['PlanPolicyInput'],
              },
            }),
          );
          onChanged(
            `Bound to “${plan?.name ?? planId}”, ${data.binding === 'latest' ? `at latest (now v${data.version})` : `pinned to v${data.version}`}.`,
          );
        });
      }}
    >
      <h3 id="bind-heading">{binding ? 'Change the binding' : 'Bind a tracking plan'}</h3>
      <div class="fields">
        <div class="field">
          <label for="bind-plan">Plan</label>
          <select
            id="bind-plan"
            value={planId}
            onChange={(e) => {
              setPlanId(e.currentTarget.value);
              setVersion('latest');
            }}
          >
            {published.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name} (v{p.latestVersion})
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="bind-version">Version</label>
          <select id="bind-version" value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
            <option value="latest">latest (follows each publish)</option>
            {versions.map((v) => (
              <option key={v} value={String(v)}>
                v{v} (pinned)
              </option>
            ))}
          </select>
        </div>
      </div>
      <table class="stack policy" aria-label="Policy">
        <caption class="muted">
          What happens to an event with a violation of each kind: allow (flag it), omit (strip the offending
          values) or quarantine (keep it out, replayable). An override applies to one destination.
        </caption>
        <thead>
          <tr>
            <th scope="col">Violation</th>
            <th scope="col">All destinations</th>
            {overrides.map((o) => (
              <th key={o.destination} scope="col">
                {labelOf(destinations, o.destination)}{' '}
                <button
                  type="button"
                  class="small"
                  aria-label={`Remove the override for ${labelOf(destinations, o.destination)}`}
                  onClick={() => setOverrides((all) => all.filter((x) => x.destination !== o.destination))}
                >
                  Remove
                </button>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {violationClasses.map((c) => (
            <tr key={c}>
              <th scope="row">{classLabels[c]}</th>
              <td data-label="All destinations">
                <select
                  aria-label={`${classLabels[c]}: all destinations`}
                  value={actions[c]}
                  onChange={(e) => setActions({ ...actions, [c]: e.currentTarget.value as PolicyAction })}
                >
                  {actionsFor(c).map((a) => (
                    <option key={a} value={a}>
                      {a}
                    </option>
                  ))}
                </select>
              </td>
              {overrides.map((o) => (
                <td key={o.destination} data-label={labelOf(destinations, o.destination)}>
                  <select
                    aria-label={`${classLabels[c]}: ${labelOf(destinations, o.destination)}`}
                    value={o.choices[c] ?? ''}
                    onChange={(e) =>
                      setOverride(o.destination, c, e.currentTarget.value as PolicyAction | '')
                    }
                  >
                    <option value="">as all destinations</option>
                    {actionsFor(c).map((a) => (
                      <option key={a} value={a}>
                        {a}
                      </option>
                    ))}
                  </select>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {unused.length > 0 ? (
        <div class="fields">
          <div class="field">
            <label for="bind-override">Override for</label>
            <select id="bind-override" value={adding} onChange={(e) => setAdding(e.currentTarget.value)}>
              {unused.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.label}
                </option>
              ))}
            </select>
          </div>
          <button
            type="button"
            disabled={!unused.some((d) => d.id === adding)}
            onClick={() => {
              setOverrides((all) => [...all, { destination: adding, choices: {} }]);
              setAdding(unused.find((d) => d.id !== adding)?.id ?? '');
            }}
          >
            Add override
          </button>
        </div>
      ) : null}
      {problems.length > 0 ? (
        <div class="notice error" role="alert" id="bind-problems">
          <p>
            {error instanceof ApiError ? (
              <>
                {error.message} ({error.problem.code})
              </>
            ) : null}
          </p>
          <ProblemList problems={problems} pointerInto="policy" />
        </div>
      ) : error ? (
        <ErrorNotice error={error} />
      ) : null}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || !plan}>
          {binding ? 'Save the binding' : 'Bind'}
        </button>
        {binding && !asking ? (
          <button type="button" class="danger" disabled={busy} onClick={() => setAsking(true)}>
            Unbind
          </button>
        ) : null}
      </div>
      {binding && asking ? (
        <div class="confirm" role="group" aria-label="Confirm: unbind">
          <p>Unbind the plan? This key&apos;s events are then held to no plan (within seconds).</p>
          <div class="actions">
            <button
              type="button"
              class="small danger"
              disabled={busy}
              onClick={() =>
                void attempt(setBusy, setError, async () => {
                  await call(
                    'change tracking plans',
                    client.DELETE('/api/v1/write-keys/{writeKeyId}/tracking-plan', path),
                  );
                  setAsking(false);
                  onChanged("Unbound: this key's events are held to no plan.");
                })
              }
            >
              Unbind now
            </button>
            <button type="button" class="small" disabled={busy} onClick={() => setAsking(false)}>
              Cancel
            </button>
          </div>
        </div>
      ) : null}
    </form>
  );
}
