import { request } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';
import { ClickHouseError, createClient, type ClickHouseClient } from '@clickhouse/client';
import { useClickHouseTestServer } from './clickhouse-test-server';

// The unmodified @clickhouse/client against the chdb test server, as the warehouse engine
// will use it against a real one.

const server = useClickHouseTestServer();
let client: ClickHouseClient;

beforeAll(() => {
  client = createClient({ url: server.current.url, request_timeout: 20_000 });
});
afterAll(async () => {
  await client.close();
});

/** A raw HTTP exchange, for what the client does not show (headers, bodies, statuses). */
function raw(
  path: string,
  options: { method?: string; body?: Buffer | string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.current.port,
        path,
        method: options.method ?? 'POST',
        headers: options.headers,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

async function rows<T>(
  query: string,
  extra: Parameters<ClickHouseClient['query']>[0] = { query },
): Promise<T[]> {
  const result = await client.query({ ...extra, query, format: 'JSONEachRow' });
  return result.json<T>();
}

async function caught(promise: Promise<unknown>): Promise<ClickHouseError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ClickHouseError) return error;
    throw error;
  }
  throw new Error('expected a ClickHouseError');
}

describe('the chdb HTTP server with the unmodified @clickhouse/client', () => {
  test('ping answers Ok. on /ping and success through the client', async () => {
    expect(await client.ping()).toEqual({ success: true });
    const response = await raw('/ping', { method: 'GET' });
    expect([response.status, response.body.toString()]).toEqual([200, 'Ok.\n']);
  });

  test('command runs DDL, insert and query read back the rows with the summary counts', async () => {
    await client.command({
      query:
        "CREATE TABLE default.events (id UInt32, name String, at DateTime64(6, 'UTC')) ENGINE = MergeTree ORDER BY id",
    });
    const inserted = await client.insert({
      table: 'default.events',
      values: [
        { id: 1, name: 'a', at: '2024-01-02 03:04:05.123456' },
        { id: 2, name: 'b\tc', at: '2024-01-02 03:04:06.000001' },
      ],
      format: 'JSONEachRow',
    });
    expect(inserted.summary?.written_rows).toBe('2');
    expect(Number(inserted.summary?.written_bytes)).toBeGreaterThan(0);
    const result = await client.query({
      query: 'SELECT id, name, at FROM default.events ORDER BY id',
      format: 'JSONEachRow',
    });
    expect(result.response_headers['x-clickhouse-format']).toBe('JSONEachRow');
    expect(result.response_headers['content-type']).toBe('application/json; charset=UTF-8');
    expect(result.response_headers['x-clickhouse-timezone']).toBe('UTC');
    expect(await result.json()).toEqual([
      { id: 1, name: 'a', at: '2024-01-02 03:04:05.123456' },
      { id: 2, name: 'b\tc', at: '2024-01-02 03:04:06.000001' },
    ]);
    const summary = JSON.parse(String(result.response_headers['x-clickhouse-summary'])) as Record<
      string,
      string
    >;
    expect(summary).toMatchObject({ read_rows: '2', result_rows: '2', written_rows: '0' });
  });

  test('the same insert_deduplication_token twice adds the rows once; another token adds them', async () => {
    await client.command({
      query:
        'CREATE TABLE default.dedup (id UInt32) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000',
    });
    const insert = (token: string) =>
      client.insert({
        table: 'default.dedup',
        values: [{ id: 7 }],
        format: 'JSONEachRow',
        clickhouse_settings: { insert_deduplication_token: token },
      });
    await insert('batch-1');
    await insert('batch-1');
    expect(await rows<{ c: number }>('SELECT count() AS c FROM default.dedup')).toEqual([{ c: 1 }]);
    await insert('batch-2');
    await client.insert({ table: 'default.dedup', values: [{ id: 8 }], format: 'JSONEachRow' });
    expect(await rows<{ c: number }>('SELECT count() AS c FROM default.dedup')).toEqual([{ c: 3 }]);
  });

  test('query_params of each type the client sends arrive as the same values', async () => {
    const at = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
    const result = await rows<Record<string, unknown>>(
      `SELECT {s:String} AS s, {tricky:String} AS tricky, {list:Array(String)} AS list,
              {when:DateTime64(6, 'UTC')} AS when, {date:DateTime64(3, 'UTC')} AS date,
              {n:Int64} AS n, {missing:Nullable(String)} AS missing, {none:Nullable(Int32)} AS none`,
      {
        query: '',
        query_params: {
          s: 'plain',
          tricky: "it's a\ttab, a\nnewline and a \\ backslash",
          list: ['a', "b'c", 'd\\e', 'f\tg'],
          when: '2024-01-02 03:04:05.123456',
          date: at,
          n: -42,
          missing: null,
          none: null,
        },
      },
    );
    expect(result).toEqual([
      {
        s: 'plain',
        tricky: "it's a\ttab, a\nnewline and a \\ backslash",
        list: ['a', "b'c", 'd\\e', 'f\tg'],
        when: '2024-01-02 03:04:05.123456',
        date: '2024-01-02 03:04:05.678',
        n: -42,
        missing: null,
        none: null,
      },
    ]);
  });

  test('settings hold for their own request only, two at once', async () => {
    const blockSize = (value: number) =>
      rows<{ v: string }>("SELECT toUInt64(getSetting('max_block_size')) AS v FROM numbers(1000) LIMIT 1", {
        query: '',
        // The engine writes 64-bit integers as JSON numbers unless this asks for strings.
        clickhouse_settings: { max_block_size: String(value), output_format_json_quote_64bit_integers: 1 },
      });
    const [first, second] = await Promise.all([blockSize(1111), blockSize(2222)]);
    expect([first, second]).toEqual([[{ v: '1111' }], [{ v: '2222' }]]);
    const unquoted = await rows<{ v: number }>("SELECT toUInt64(getSetting('max_block_size')) AS v");
    expect(unquoted).toHaveLength(1);
    expect(unquoted[0]?.v).toBeGreaterThan(2222);
    // Merged with the SETTINGS clause a query already ends with.
    expect(
      await rows<{ a: string; b: string }>(
        "SELECT getSetting('max_block_size') AS a, getSetting('max_threads') AS b SETTINGS max_threads = 3",
        { query: '', clickhouse_settings: { max_block_size: '3333' } },
      ),
    ).toEqual([{ a: 3333, b: 3 }]);
  });

  test('errors come as the server sends them: code, type, status and exception header', async () => {
    const unknownTable = await caught(
      client.query({ query: 'SELECT * FROM default.nope', format: 'JSONEachRow' }),
    );
    expect([unknownTable.code, unknownTable.type]).toEqual(['60', 'UNKNOWN_TABLE']);
    const syntax = await caught(client.command({ query: 'SELEC 1' }));
    expect([syntax.code, syntax.type]).toEqual(['62', 'SYNTAX_ERROR']);
    const setting = await caught(
      client.command({ query: 'SELECT 1', clickhouse_settings: { no_such_setting: 1 } as never }),
    );
    expect([setting.code, setting.type]).toEqual(['115', 'UNKNOWN_SETTING']);

    const response = await raw('/?query=SELECT%20*%20FROM%20default.nope');
    expect(response.status).toBe(404);
    expect(response.headers['x-clickhouse-exception-code']).toBe('60');
    expect(response.body.toString()).toMatch(
      /^Code: 60\. DB::Exception: .*default\.nope.*\. \(UNKNOWN_TABLE\) \(version 26\.7\.\d+\.\d+\)\n$/s,
    );
    expect((await raw('/', { body: 'SELEC 1' })).status).toBe(400);
    expect((await raw('/?query=SELECT%201&nope=1')).status).toBe(404);
    expect((await raw('/?query=SELECT%201&database=nodb')).body.toString()).toMatch(
      /^Code: 81\..*\(UNKNOWN_DATABASE\)/,
    );
    const get = await raw('/?query=CREATE%20TABLE%20default.g%20(a%20UInt8)%20ENGINE%3DMemory', {
      method: 'GET',
    });
    expect([get.status, get.headers['x-clickhouse-exception-code']]).toEqual([500, '164']);
  });

  test('a trailing FORMAT and default_format choose the output format and its headers', async () => {
    const json = await raw('/?default_format=JSONCompact', { body: 'SELECT 1 AS x' });
    expect(json.headers['x-clickhouse-format']).toBe('JSONCompact');
    expect((JSON.parse(json.body.toString()) as { data: unknown }).data).toEqual([[1]]);
    const tsv = await raw('/', { body: "SELECT 1 AS x, 'a' AS y FORMAT TabSeparated" });
    expect([tsv.headers['content-type'], tsv.body.toString()]).toEqual([
      'text/tab-separated-values; charset=UTF-8',
      '1\ta\n',
    ]);
    const plain = await raw('/?query=SELECT%202', { method: 'GET' });
    expect([plain.headers['x-clickhouse-format'], plain.body.toString()]).toEqual(['TabSeparated', '2\n']);
    expect(plain.headers['x-clickhouse-query-id']).toMatch(/^[0-9a-f-]{36}$/);
    const named = await raw('/?query_id=my-query', { body: 'SELECT 1' });
    expect(named.headers['x-clickhouse-query-id']).toBe('my-query');
  });

  test('gzip both ways: a compressed request body and a compressed response', async () => {
    const gzipClient = createClient({
      url: server.current.url,
      compression: { request: true, response: true },
    });
    try {
      await gzipClient.command({
        query: 'CREATE TABLE default.zipped (id UInt32) ENGINE = MergeTree ORDER BY id',
      });
      await gzipClient.insert({
        table: 'default.zipped',
        values: [{ id: 1 }, { id: 2 }],
        format: 'JSONEachRow',
      });
      const result = await gzipClient.query({
        query: 'SELECT sum(id) AS s FROM default.zipped',
        format: 'JSONEachRow',
      });
      expect(result.response_headers['content-encoding']).toBe('gzip');
      expect(await result.json()).toEqual([{ s: 3 }]);
    } finally {
      await gzipClient.close();
    }
    const response = await raw('/?enable_http_compression=1', {
      body: gzipSync('SELECT 40 + 2'),
      headers: { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' },
    });
    expect(gunzipSync(response.body).toString()).toBe('42\n');
  });

  test('a client that aborts mid-query leaves the server answering', async () => {
    const controller = new AbortController();
    const slow = client.query({
      query:
        'SELECT sleepEachRow(0.5) FROM numbers(4) SETTINGS function_sleep_max_microseconds_per_block = 10000000',
      abort_signal: controller.signal,
    });
    setImmediate(() => controller.abort());
    await expect(slow).rejects.toThrow(/abort/i);
    expect(await rows<{ x: number }>('SELECT 1 AS x')).toEqual([{ x: 1 }]);
  });

  test('bad requests get ClickHouse errors, never a crash', async () => {
    expect(
      (await raw('/', { body: Buffer.from('not gzip'), headers: { 'Content-Encoding': 'gzip' } })).headers[
        'x-clickhouse-exception-code'
      ],
    ).toBe('354');
    expect((await raw('/', { method: 'POST' })).headers['x-clickhouse-exception-code']).toBe('36');
    expect((await raw('/nowhere', { method: 'GET' })).status).toBe(404);
    expect(
      (await raw('/?param_x=%5B%27a', { body: 'SELECT {x:Array(String)}' })).status,
    ).toBeGreaterThanOrEqual(400);
    expect(await client.ping()).toEqual({ success: true });
  });
});

describe('a server that requires a login', () => {
  const guarded = useClickHouseTestServer({ user: 'loader', password: 's3cret' });

  test('the right user and password pass; a wrong or missing one is AUTHENTICATION_FAILED', async () => {
    const good = createClient({ url: guarded.current.url, username: 'loader', password: 's3cret' });
    const wrong = createClient({ url: guarded.current.url, username: 'loader', password: 'nope' });
    const none = createClient({ url: guarded.current.url });
    try {
      expect(await (await good.query({ query: 'SELECT 1 AS x', format: 'JSONEachRow' })).json()).toEqual([
        { x: 1 },
      ]);
      for (const bad of [wrong, none]) {
        const error = await caught(bad.query({ query: 'SELECT 1', format: 'JSONEachRow' }));
        expect([error.code, error.type]).toEqual(['516', 'AUTHENTICATION_FAILED']);
      }
    } finally {
      await Promise.all([good.close(), wrong.close(), none.close()]);
    }
  });
});

describe('stopping, killing and restarting the server', () => {
  const lifecycle = useClickHouseTestServer();

  test('kill() refuses connections; restart() serves the same data on the same port', async () => {
    const c = createClient({ url: lifecycle.current.url, request_timeout: 5000 });
    try {
      await c.command({ query: 'CREATE TABLE default.kept (id UInt32) ENGINE = MergeTree ORDER BY id' });
      await c.insert({ table: 'default.kept', values: [{ id: 5 }], format: 'JSONEachRow' });
      const port = lifecycle.current.port;
      lifecycle.current.kill();
      const deadline = Date.now() + 10_000;
      let refused: unknown;
      while (Date.now() < deadline) {
        // The first ping may fail with ECONNRESET on a kept-alive socket; then a new one is refused.
        refused = await c.ping();
        if ((refused as { error?: { code?: string } }).error?.code === 'ECONNREFUSED') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect((refused as { error?: { code?: string } }).error?.code).toBe('ECONNREFUSED');
      await lifecycle.current.restart();
      expect(lifecycle.current.port).toBe(port);
      expect(
        await (await c.query({ query: 'SELECT id FROM default.kept', format: 'JSONEachRow' })).json(),
      ).toEqual([{ id: 5 }]);
    } finally {
      await c.close();
    }
  });
});
