import { useEffect, useRef, useState } from 'preact/hooks';
import { Allowed, useAccess } from '../access';
import { call, client } from '../api';
import { attempt, Field, fieldErrorsOf, FormError } from '../field-errors';
import { defaultIngestionHost, renderSnippet } from '../snippet';
import type { WriteKey } from '../types';
import { Badge, CopyButton, ErrorNotice, Show, Time, useLoad } from '../ui';
import { Debugger } from './debugger';
import { PlanBinding } from './plan-binding';

/** A key's secret as the API answered it once (create or rotate): shown until dismissed. */
interface Shown {
  id: string;
  name: string;
  key: string;
  how: 'created' | 'rotated';
}

export function WriteKeys() {
  const [loaded, reload] = useLoad(
    () => call('read write keys', client.GET('/api/v1/write-keys', { params: { query: { limit: 100 } } })),
    [],
  );
  const [shown, setShown] = useState<Shown | null>(null);
  const [revoked, setRevoked] = useState<string | null>(null);
  const { can } = useAccess();
  const show = (value: Shown) => {
    setRevoked(null);
    setShown(value);
    reload();
  };
  return (
    <>
      <h1>Write keys</h1>
      {shown ? <ShownOnce shown={shown} onDismiss={() => setShown(null)} /> : null}
      {revoked ? (
        <p class="notice good" role="status">
          Revoked “{revoked}”: ingestion refuses it from now on.
        </p>
      ) : null}
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No write keys yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">State</th>
                  <th scope="col">Allowed origins</th>
                  <th scope="col">Created</th>
                  {can('write_keys.write') ? <th scope="col">Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {data.map((k) => (
                  <tr key={k.id}>
                    <td>
                      <a href={`#/write-keys/${k.id}`}>{k.name}</a>
                    </td>
                    <td class="mono">{k.maskedKey}</td>
                    <td>
                      <Badge value={k.state} />
                    </td>
                    <td>
                      {k.allowedOrigins.length ? k.allowedOrigins.join(', ') : <span class="muted">any</span>}
                    </td>
                    <td>
                      <Time at={k.createdAt} />
                    </td>
                    <Allowed scope="write_keys.write">
                      <td>
                        <KeyActions
                          writeKey={k}
                          onRotated={(key) => show({ id: k.id, name: k.name, key, how: 'rotated' })}
                          onRevoked={() => {
                            setShown(null);
                            setRevoked(k.name);
                            reload();
                          }}
                        />
                      </td>
                    </Allowed>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
      <Allowed scope="write_keys.write">
        <CreateWriteKey onCreated={(k) => show({ ...k, how: 'created' })} />
      </Allowed>
    </>
  );
}

/** Hostnames or origins typed one per line, or separated by commas or spaces. */
function originsOf(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((o) => o.trim())
    .filter(Boolean);
}

function CreateWriteKey({
  onCreated,
}: {
  onCreated: (k: { id: string; name: string; key: string }) => void;
}) {
  const [name, setName] = useState('');
  const [origins, setOrigins] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [missingName, setMissingName] = useState(false);
  const [busy, setBusy] = useState(false);
  const fields = missingName ? { name: 'Enter a name for the key.' } : fieldErrorsOf(error);
  return (
    <section aria-labelledby="create-key-heading">
      <h2 id="create-key-heading">Create a write key</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setMissingName(!name.trim());
          if (!name.trim()) return;
          void attempt(setBusy, setError, async () => {
            const { data } = await call(
              'create write keys',
              client.POST('/api/v1/write-keys', {
                body: { name: name.trim(), allowedOrigins: originsOf(origins) },
              }),
            );
            setName('');
            setOrigins('');
            onCreated({ id: data.id, name: data.name, key: data.key });
          });
        }}
      >
        <Field path="name" label="Name" errors={fields}>
          {(props) => (
            <input
              {...props}
              name="name"
              required
              maxLength={200}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field
          path="allowedOrigins"
          label="Allowed origins"
          errors={fields}
          hint="Hostnames (shop.example.com) or origins (https://shop.example.com), one per line. A subdomain of one is allowed too. Empty: any origin."
        >
          {(props) => (
            <textarea
              {...props}
              name="allowedOrigins"
              rows={3}
              spellcheck={false}
              value={origins}
              onInput={(e) => setOrigins(e.currentTarget.value)}
            />
          )}
        </Field>
        <FormError error={error} errors={fields} shown={['name', 'allowedOrigins']} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create the write key'}
        </button>
      </form>
    </section>
  );
}
/**
 * The secret the API answered once, with a copy button and the warning that it cannot be read
 * again. Focused when it appears, so a keyboard or screen reader user lands on it.
 */
function ShownOnce({ shown, onDismiss }: { shown: Shown; onDismiss: () => void }) {
  const box = useRef<HTMLElement>(null);
  useEffect(() => box.current?.focus(), [shown.key]);
  return (
    <section
      class="notice once"
      ref={box}
      tabIndex={-1}
      aria-labelledby="once-heading"
      data-write-key-id={shown.id}
    >
      <h2 id="once-heading">
        {shown.how === 'created' ? 'New write key' : 'Rotated write key'} “{shown.name}”
      </h2>
      <p>
        <strong>Copy this key now: it is shown only once.</strong> The service keeps only its hash and cannot
        show it again
        {shown.how === 'rotated' ? '; the previous key of this name is refused from now on' : ''}.
      </p>
      <div class="fields">
        <input
          class="mono secret"
          aria-label="The write key"
          readOnly
          value={shown.key}
          spellcheck={false}
          onFocus={(e) => e.currentTarget.select()}
        />
        <CopyButton text={shown.key} label="Copy the key" />
        <button type="button" onClick={onDismiss}>
          I have stored it
        </button>
      </div>
    </section>
  );
}

/** Rotate and revoke, each asking to be confirmed first (both stop the current key at once). */
function KeyActions({
  writeKey,
  onRotated,
  onRevoked,
}: {
  writeKey: WriteKey;
  onRotated: (key: string) => void;
  onRevoked: () => void;
}) {
  const [asking, setAsking] = useState<'rotate' | 'revoke' | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (writeKey.state !== 'active') return null;
  const path = { params: { path: { writeKeyId: writeKey.id } } };
  const act = (work: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    work().then(
      () => {
        setBusy(false);
        setAsking(null);
      },
      (e: unknown) => {
        setBusy(false);
        setError(e);
      },
    );
  };
  return (
    <div class="key-actions">
      {asking === null ? (
        <div class="actions">
          <button type="button" class="small" onClick={() => setAsking('rotate')}>
            Rotate
          </button>
          <button type="button" class="small danger" onClick={() => setAsking('revoke')}>
            Revoke
          </button>
        </div>
      ) : (
        <div class="confirm" role="group" aria-label={`Confirm: ${asking} “${writeKey.name}”`}>
          <p>
            {asking === 'rotate'
              ? `Rotate “${writeKey.name}”? It gets a new key, shown once; the current key stops working at once.`
              : `Revoke “${writeKey.name}”? Ingestion refuses it from now on; this cannot be undone.`}
          </p>
          <div class="actions">
            <button
              type="button"
              class={asking === 'rotate' ? 'small primary' : 'small danger'}
              disabled={busy}
              onClick={() =>
                act(
                  asking === 'rotate'
                    ? async () => {
                        const { data } = await call(
                          'rotate write keys',
                          client.POST('/api/v1/write-keys/{writeKeyId}/rotate', path),
                        );
                        onRotated(data.key);
                      }
                    : async () => {
                        await call(
                          'revoke write keys',
                          client.DELETE('/api/v1/write-keys/{writeKeyId}', path),
                        );
                        onRevoked();
                      },
                )
              }
            >
              {asking === 'rotate' ? 'Rotate now' : 'Revoke now'}
            </button>
            <button type="button" class="small" disabled={busy} onClick={() => setAsking(null)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {error ? <ErrorNotice error={error} /> : null}
    </div>
  );
}

/** One write key: its settings, the snippet and the live debugger of its events. */
export function WriteKeyPage({ id }: { id: string }) {
  const [loaded, reload] = useLoad(
    () =>
      call(
        'read write keys',
        client.GET('/api/v1/write-keys/{writeKeyId}', { params: { path: { writeKeyId: id } } }),
      ),
    [id],
  );
  const [shown, setShown] = useState<Shown | null>(null);
  return (
    <>
      <p>
        <a href="#/write-keys">← Write keys</a>
      </p>
      <Show loaded={loaded}>
        {({ data: key }) => (
          <>
            <h1>Write key “{key.name}”</h1>
            {shown ? <ShownOnce shown={shown} onDismiss={() => setShown(null)} /> : null}
            <dl class="facts">
              <dt>Key</dt>
              <dd class="mono">{key.maskedKey}</dd>
              <dt>State</dt>
              <dd>
                <Badge value={key.state} />
              </dd>
              <dt>Allowed origins</dt>
              <dd>{key.allowedOrigins.length ? key.allowedOrigins.join(', ') : 'any'}</dd>
              <dt>Created</dt>
              <dd>
                <Time at={key.createdAt} />
              </dd>
            </dl>
            <Allowed scope="write_keys.write">
              <KeyActions
                writeKey={key}
                onRotated={(secret) => {
                  setShown({ id: key.id, name: key.name, key: secret, how: 'rotated' });
                  reload();
                }}
                onRevoked={() => {
                  setShown(null);
                  reload();
                }}
              />
            </Allowed>
            <PlanBinding writeKeyId={key.id} active={key.state === 'active'} />
            <Debugger writeKeyId={key.id} />
            <Snippet writeKey={key} secret={shown?.key} />
          </>
        )}
      </Show>
    </>
  );
}

function Snippet({ writeKey, secret: answered }: { writeKey: WriteKey; secret?: string | undefined }) {
  const [secret, setSecret] = useState(answered ?? '');
  // A key just rotated on this page fills the snippet in (it stays in the page).
  useEffect(() => {
    if (answered) setSecret(answered);
  }, [answered]);
  const [host, setHost] = useState(defaultIngestionHost());
  const snippet = renderSnippet(secret.trim() || 'YOUR_WRITE_KEY', host.trim() || defaultIngestionHost());
  return (
    <section aria-labelledby="snippet-heading">
      <h2 id="snippet-heading">Snippet</h2>
      <p class="notice">
        The key itself ({writeKey.maskedKey}) is shown only once, when it is created; the API cannot give it
        back. Paste it below to fill in the snippet (it stays in this page), or keep the placeholder{' '}
        <code>YOUR_WRITE_KEY</code>.
      </p>
      <div class="fields">
        <label>
          Write key
          <input
            type="password"
            autoComplete="off"
            spellcheck={false}
            placeholder={`${writeKey.keyPrefix}…`}
            value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)}
          />
        </label>
        <label>
          Ingestion URL
          <input type="url" value={host} onInput={(e) => setHost(e.currentTarget.value)} />
        </label>
      </div>
      <pre class="snippet" tabIndex={0} aria-label="The snippet for the page's head">
        {snippet}
      </pre>
      <CopyButton text={snippet} label="Copy the snippet" />
    </section>
  );
}
