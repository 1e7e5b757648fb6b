import { useState } from 'preact/hooks';
import { call, client } from '../api';
import { defaultIngestionHost, renderSnippet } from '../snippet';
import type { WriteKey } from '../types';
import { Badge, CopyButton, Show, Time, useLoad } from '../ui';
import { Debugger } from './debugger';

export function WriteKeys() {
  const [loaded] = useLoad(
    () => call('read write keys', client.GET('/api/v1/write-keys', { params: { query: { limit: 100 } } })),
    [],
  );
  return (
    <>
      <h1>Write keys</h1>
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
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </>
  );
}

/** One write key: its settings, the snippet and the live debugger of its events. */
export function WriteKeyPage({ id }: { id: string }) {
  const [loaded] = useLoad(
    () =>
      call(
        'read write keys',
        client.GET('/api/v1/write-keys/{writeKeyId}', { params: { path: { writeKeyId: id } } }),
      ),
    [id],
  );
  return (
    <>
      <p>
        <a href="#/write-keys">← Write keys</a>
      </p>
      <Show loaded={loaded}>
        {({ data: key }) => (
          <>
            <h1>Write key “{key.name}”</h1>
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
            <Debugger writeKeyId={key.id} />
            <Snippet writeKey={key} />
          </>
        )}
      </Show>
    </>
  );
}

function Snippet({ writeKey }: { writeKey: WriteKey }) {
  const [secret, setSecret] = useState('');
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
