import { useState } from 'preact/hooks';
import { Allowed, useAccess } from '../access';
import { ApiError, call, client } from '../api';
import type { DeadLetter } from '../types';
import { Badge, ErrorNotice, Json, Show, Time, useLoad, useSelection } from '../ui';

type Status = 'pending' | 'replayed' | 'discarded';

/** Letters of one destination (target) failing for one reason. */
interface Group {
  key: string;
  destination: string;
  destinationId: string;
  destinationName: string | null;
  reasonCode: string;
  letters: DeadLetter[];
  firstSeenAt: string;
  lastSeenAt: string;
}

/** Groups the letters by target and reason code, the group seen last first. */
export function groupLetters(letters: readonly DeadLetter[]): Group[] {
  const groups = new Map<string, Group>();
  for (const letter of letters) {
    const key = `${letter.destination}\u0000${letter.destinationId}\u0000${letter.reasonCode}`;
    const group = groups.get(key) ?? {
      key,
      destination: letter.destination,
      destinationId: letter.destinationId,
      destinationName: letter.destinationName,
      reasonCode: letter.reasonCode,
      letters: [],
      firstSeenAt: letter.firstSeenAt,
      lastSeenAt: letter.lastSeenAt,
    };
    group.letters.push(letter);
    if (letter.firstSeenAt < group.firstSeenAt) group.firstSeenAt = letter.firstSeenAt;
    if (letter.lastSeenAt > group.lastSeenAt) group.lastSeenAt = letter.lastSeenAt;
    groups.set(key, group);
  }
  return [...groups.values()].sort((a, b) => b.lastSeenAt.localeCompare(a.lastSeenAt));
}

const LIMIT = 100;

/**
 * The account's dead letters (GET /api/v1/dead-letters), grouped by destination and reason;
 * the selected ones replayed or discarded. Replay and Discard show only for a key with their
 * scope (`dead_letters.replay`, `dead_letters.discard`); a read-only key sees the letters alone.
 */
export function DeadLetters() {
  const [status, setStatus] = useState<Status>('pending');
  const { selected, toggle, clear } = useSelection();
  const [result, setResult] = useState<string | null>(null);
  const [failure, setFailure] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const { can } = useAccess();
  const selectable = can('dead_letters.replay') || can('dead_letters.discard');
  const [loaded, reload] = useLoad(
    () =>
      call(
        'read dead letters',
        client.GET('/api/v1/dead-letters', { params: { query: { status, limit: LIMIT } } }),
      ),
    [status],
  );

  const act = (verb: 'replay' | 'discard') => {
    const ids = [...selected];
    setBusy(true);
    setResult(null);
    setFailure(null);
    const answer =
      verb === 'replay'
        ? call('replay dead letters', client.POST('/api/v1/dead-letters/replay', { body: { ids } })).then(
            (r) =>
              `Replayed ${r.replayed}, skipped ${r.skipped}${r.skipped ? ' (already replayed or discarded)' : ''}.`,
          )
        : call('discard dead letters', client.POST('/api/v1/dead-letters/discard', { body: { ids } })).then(
            (r) =>
              `Discarded ${r.discarded}, skipped ${r.skipped}${r.skipped ? ' (already replayed or discarded)' : ''}.`,
          );
    answer.then(
      (text) => {
        setBusy(false);
        setResult(text);
        clear();
        reload();
      },
      (error: unknown) => {
        setBusy(false);
        setFailure(error);
      },
    );
  };

  return (
    <>
      <h1>Dead letters</h1>
      <p class="muted">
        Events a destination refused for good, or that ran out of attempts. Fix the cause (the destination
        app's credentials or settings), then replay them: each pending letter is sent again once.
      </p>
      <div class="actions">
        <label for="dead-letter-status">Status</label>
        <select
          id="dead-letter-status"
          value={status}
          onChange={(e) => {
            setStatus(e.currentTarget.value as Status);
            clear();
          }}
        >
          <option value="pending">pending</option>
          <option value="replayed">replayed</option>
          <option value="discarded">discarded</option>
        </select>
        <Allowed scope="dead_letters.replay">
          <button
            type="button"
            class="primary"
            disabled={busy || selected.size === 0}
            onClick={() => act('replay')}
          >
            Replay selected ({selected.size})
          </button>
        </Allowed>
        <Allowed scope="dead_letters.discard">
          <button type="button" disabled={busy || selected.size === 0} onClick={() => act('discard')}>
            Discard selected ({selected.size})
          </button>
        </Allowed>
      </div>
      {result ? (
        <p class="notice good" role="status">
          {result}
        </p>
      ) : null}
      {failure ? <ReplayFailure error={failure} what="letters" /> : null}
      <Show loaded={loaded}>
        {({ data, pagination }) =>
          data.length === 0 ? (
            <p class="muted">No {status} dead letters.</p>
          ) : (
            <>
              {pagination.total > data.length ? (
                <p class="muted">
                  The {data.length} last seen of {pagination.total}.
                </p>
              ) : null}
              {groupLetters(data).map((group) => (
                <LetterGroup
                  key={group.key}
                  group={group}
                  selected={selected}
                  toggle={selectable ? toggle : null}
                />
              ))}
            </>
          )
        }
      </Show>
    </>
  );
}

/** A replay Kafka did not take, said plainly (`what` it did not take); other failures as the API says them. */
export function ReplayFailure({ error, what }: { error: unknown; what: string }) {
  if (error instanceof ApiError && error.problem.code === 'dead_letters_unavailable')
    return (
      <p class="notice error" role="alert">
        Nothing was replayed: the delivery pipeline did not take the {what}. Try again in a minute.
      </p>
    );
  return <ErrorNotice error={error} />;
}

function LetterGroup({
  group,
  selected,
  toggle,
}: {
  group: Group;
  selected: ReadonlySet<string>;
  /** Null for a key that can neither replay nor discard: no checkboxes. */
  toggle: ((ids: readonly string[], on: boolean) => void) | null;
}) {
  const ids = group.letters.map((l) => l.id);
  const all = ids.every((id) => selected.has(id));
  const title = group.destinationName ?? group.destinationId;
  const headingId = `group-${ids[0]}`;
  return (
    <section class="dead-letter-group" aria-labelledby={headingId}>
      <h2 id={headingId}>
        {title} <span class="muted">({group.destination})</span> · <code>{group.reasonCode}</code>
      </h2>
      <dl class="facts">
        <dt>Letters</dt>
        <dd>{group.letters.length}</dd>
        <dt>First seen</dt>
        <dd>
          <Time at={group.firstSeenAt} />
        </dd>
        <dt>Last seen</dt>
        <dd>
          <Time at={group.lastSeenAt} />
        </dd>
      </dl>
      <table>
        <thead>
          <tr>
            {toggle ? (
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label={`Select all of ${title}, ${group.reasonCode}`}
                  checked={all}
                  onChange={(e) => toggle(ids, e.currentTarget.checked)}
                />
              </th>
            ) : null}
            <th scope="col">Events</th>
            <th scope="col">Reason</th>
            <th scope="col">Attempts</th>
            <th scope="col">Times</th>
            <th scope="col">Last seen</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {group.letters.map((letter) => (
            <tr key={letter.id} data-dead-letter={letter.id}>
              {toggle ? (
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select the dead letter of ${letter.messageIds[0] ?? letter.id}`}
                    checked={selected.has(letter.id)}
                    onChange={(e) => toggle([letter.id], e.currentTarget.checked)}
                  />
                </td>
              ) : null}
              <td>
                <details>
                  <summary>
                    {letter.eventCount} event{letter.eventCount === 1 ? '' : 's'}:{' '}
                    <span class="mono">{letter.messageIds[0]}</span>
                  </summary>
                  <Json value={letter.events} label={`Events of ${letter.messageIds[0] ?? letter.id}`} />
                  {letter.eventCount > letter.events.length ? (
                    <p class="muted">
                      The first {letter.events.length} of {letter.eventCount}.
                    </p>
                  ) : null}
                </details>
              </td>
              <td>{letter.reason}</td>
              <td>
                {letter.attempts}
                {letter.permanent ? <span class="muted"> (permanent)</span> : null}
              </td>
              <td>{letter.deadLetterCount}</td>
              <td>
                <Time at={letter.lastSeenAt} />
              </td>
              <td>
                <Badge value={letter.status} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
