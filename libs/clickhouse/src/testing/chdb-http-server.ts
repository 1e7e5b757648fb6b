import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { Session, type RawInsertFormat } from 'chdb';
import { bindingValues } from './query-parameters';
import {
  parseInsert,
  parseSettingsClause,
  READ_ONLY_KINDS,
  settingsClause,
  statementKind,
  takeTrailingFormat,
  withSelectSettings,
} from './sql-text';

// A ClickHouse server for tests: the HTTP interface as ClickHouse's documentation describes it
// ("HTTP Interface": the query in the URL and/or the body, `database`, `default_format`,
// `param_<name>`, settings as URL parameters, `X-ClickHouse-*` headers, gzip both ways, /ping)
// over chdb, the ClickHouse engine in this process. docs/clickhouse-test-server.md lists what
// it covers and what it does not. One process serves one data directory (libchdb binds one per
// process); requests share one chdb session, so nothing a request sets may outlive it:
// settings travel inside the statement (a SETTINGS clause) or with chdb's insert.

export interface ChdbHttpServerOptions {
  /** The data directory. */
  path: string;
  /** 0 for any free port. */
  port: number;
  host?: string;
  /** When set, requests must log in as this user with `password`; else as `default`, no password. */
  user?: string;
  password?: string;
}

export interface ChdbHttpServer {
  readonly port: number;
  close(): Promise<void>;
}

/** URL parameters that are not settings (the server's own list for the HTTP handler). */
const RESERVED = new Set([
  'query',
  'database',
  'default_format',
  'query_id',
  'session_id',
  'session_timeout',
  'session_check',
  'user',
  'password',
  'quota_key',
  'compress',
  'decompress',
  'enable_http_compression',
  'wait_end_of_query',
  'buffer_size',
  'role',
  'stacktrace',
  'http_headers_progress_interval_ms',
  'send_progress_in_http_headers',
]);

/** Error codes (ClickHouse's src/Common/ErrorCodes.cpp) the handler raises itself. */
const CODES = {
  BAD_ARGUMENTS: 36,
  NOT_IMPLEMENTED: 48,
  UNKNOWN_COMPRESSION_METHOD: 89,
  UNKNOWN_FORMAT: 73,
  UNKNOWN_DATABASE: 81,
  UNKNOWN_SETTING: 115,
  READONLY: 164,
  ZLIB_INFLATE_FAILED: 354,
  AUTHENTICATION_FAILED: 516,
} as const;

/**
 * The HTTP status of an error, as ClickHouse's exceptionCodeToHTTPStatus
 * (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp) maps its code: 401 only for
 * REQUIRED_PASSWORD; 403 for a failed login (AUTHENTICATION_FAILED among them) or denied
 * access; 400 for a query or data that cannot be parsed; 404 for an unknown table, database,
 * setting, function or format; 500 for everything else. Keyed by the code's name here.
 */
const STATUS_BY_TYPE = new Map<string, number>([
  ['REQUIRED_PASSWORD', 401],
  ...['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE', 'ACCESS_DENIED'].map(
    (type) => [type, 403] as const,
  ),
  ...[
    'BAD_ARGUMENTS',
    'CANNOT_COMPILE_REGEXP',
    'CANNOT_PARSE_TEXT',
    'CANNOT_PARSE_ESCAPE_SEQUENCE',
    'CANNOT_PARSE_QUOTED_STRING',
    'CANNOT_PARSE_DATE',
    'CANNOT_PARSE_DATETIME',
    'CANNOT_PARSE_NUMBER',
    'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
    'CANNOT_PARSE_IPV4',
    'CANNOT_PARSE_IPV6',
    'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
    'CANNOT_PARSE_UUID',
    'DUPLICATE_COLUMN',
    'ILLEGAL_COLUMN',
    'UNKNOWN_ELEMENT_IN_AST',
    'UNKNOWN_TYPE_OF_AST_NODE',
    'THERE_IS_NO_COLUMN',
    'TOO_DEEP_AST',
    'TOO_BIG_AST',
    'UNEXPECTED_AST_STRUCTURE',
    'SYNTAX_ERROR',
    'INCORRECT_DATA',
    'TYPE_MISMATCH',
    'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  ].map((type) => [type, 400] as const),
  ...[
    'UNKNOWN_TABLE',
    'UNKNOWN_FUNCTION',
    'UNKNOWN_IDENTIFIER',
    'UNKNOWN_TYPE',
    'UNKNOWN_STORAGE',
    'UNKNOWN_DATABASE',
    'UNKNOWN_SETTING',
    'UNKNOWN_DIRECTION_OF_SORTING',
    'UNKNOWN_AGGREGATE_FUNCTION',
    'UNKNOWN_FORMAT',
    'UNKNOWN_DATABASE_ENGINE',
    'UNKNOWN_TYPE_OF_QUERY',
    'UNKNOWN_ROLE',
  ].map((type) => [type, 404] as const),
  ['QUERY_IS_TOO_LARGE', 413],
  ['NOT_IMPLEMENTED', 501],
  ['SOCKET_TIMEOUT', 503],
  ['CANNOT_OPEN_FILE', 503],
  ['HTTP_LENGTH_REQUIRED', 411],
  ['TIMEOUT_EXCEEDED', 408],
  ['CANNOT_SCHEDULE_TASK', 503],
  ['UNSUPPORTED_MEDIA_TYPE', 415],
]);

export function httpStatusOf(type: string): number {
  return STATUS_BY_TYPE.get(type) ?? 500;
}

/** An error to answer in ClickHouse's form. */
export class ClickHouseServerError extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A chdb error's code, type and bare message. chdb nests the engine's text
 * (`Code: 115. DB::Exception: Code: 115. DB::Exception: Unknown setting 'x'. (UNKNOWN_SETTING)
 * (version 26.7.2.1). (UNKNOWN_SETTING)`); the server says it once.
 */
export function fromChdbError(error: unknown): ClickHouseServerError {
  if (error instanceof ClickHouseServerError) return error;
  const text = error instanceof Error ? error.message : String(error);
  const codeField = (error as { clickhouseCode?: unknown } | null)?.clickhouseCode;
  const codeInText = /Code: (\d+)\./.exec(text)?.[1];
  const code = typeof codeField === 'number' ? codeField : codeInText ? Number(codeInText) : 1001;
  const types = [...text.matchAll(/\(([A-Z][A-Z0-9_]{2,})\)/g)].map((m) => m[1] as string);
  const type = types[types.length - 1] ?? (code === 1001 ? 'STD_EXCEPTION' : 'UNKNOWN_EXCEPTION');
  let message = text.replace(/^(?:\s*Code: \d+\. DB::Exception: )+/, '');
  for (;;) {
    const shorter = message.replace(/\.?\s*\([A-Z][A-Z0-9_]{2,}\)(?:\s*\(version [^)]*\))?\.?\s*$/, '');
    if (shorter === message) break;
    message = shorter;
  }
  return new ClickHouseServerError(code, type, message);
}

/** The formats chdb's raw insert takes, in their canonical names. */
const RAW_INSERT_FORMATS: ReadonlySet<string> = new Set([
  'JSONEachRow',
  'JSONCompactEachRow',
  'CSV',
  'CSVWithNames',
  'TSV',
  'TabSeparated',
  'TSVWithNames',
  'TabSeparatedWithNames',
]);

/** The Content-Type ClickHouse sends for an output format. */
export function contentTypeOf(format: string): string {
  if (/^(JSON|NDJSON|JSONLines)/i.test(format)) return 'application/json; charset=UTF-8';
  if (/^(TSV|TabSeparated)/i.test(format)) return 'text/tab-separated-values; charset=UTF-8';
  if (/^CSV/i.test(format))
    return `text/csv; charset=UTF-8; header=${/WithNames/i.test(format) ? 'present' : 'absent'}`;
  if (/^(Native|RowBinary|Parquet|Arrow|ORC|Avro)/i.test(format)) return 'application/octet-stream';
  return 'text/plain; charset=UTF-8';
}

/** Row-per-line formats, whose result rows the summary counts. */
const LINE_FORMATS =
  /^(JSONEachRow|JSONCompactEachRow|JSONStringsEachRow|JSONLines|NDJSON|TSV|TabSeparated|CSV)$/i;

interface Summary {
  readRows: number;
  readBytes: number;
  writtenRows: number;
  writtenBytes: number;
  resultRows: number;
  resultBytes: number;
}

function summaryHeader(summary: Summary, startedAt: bigint): string {
  return JSON.stringify({
    read_rows: String(summary.readRows),
    read_bytes: String(summary.readBytes),
    written_rows: String(summary.writtenRows),
    written_bytes: String(summary.writtenBytes),
    total_rows_to_read: String(summary.readRows),
    result_rows: String(summary.resultRows),
    result_bytes: String(summary.resultBytes),
    elapsed_ns: String(process.hrtime.bigint() - startedAt),
  });
}

const MAX_BODY_BYTES = 256 * 1024 * 1024;

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(
          new ClickHouseServerError(CODES.BAD_ARGUMENTS, 'BAD_ARGUMENTS', 'The request body is too large'),
        );
        request.destroy();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
    request.on('aborted', () => reject(new Error('request aborted')));
  });
}

function decodeBody(body: Buffer, encoding: string | undefined): Buffer {
  const name = (encoding ?? '').trim().toLowerCase();
  if (body.length === 0 || name === '' || name === 'identity') return body;
  try {
    if (name === 'gzip' || name === 'x-gzip') return gunzipSync(body);
    if (name === 'deflate') return inflateSync(body);
    if (name === 'br') return brotliDecompressSync(body);
  } catch (error) {
    throw new ClickHouseServerError(
      CODES.ZLIB_INFLATE_FAILED,
      'ZLIB_INFLATE_FAILED',
      `inflate failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  throw new ClickHouseServerError(
    CODES.UNKNOWN_COMPRESSION_METHOD,
    'UNKNOWN_COMPRESSION_METHOD',
    `Unknown compression method: ${name}`,
  );
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The user and password of a request: X-ClickHouse-User/Key, Basic auth, or URL parameters. */
function credentialsOf(request: IncomingMessage, url: URL): { user: string; password: string } {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const basic = /^Basic\s+(.+)$/i.exec(header('authorization') ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon === -1
      ? { user: decoded, password: '' }
      : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  const user = header('x-clickhouse-user') ?? url.searchParams.get('user') ?? 'default';
  const password = header('x-clickhouse-key') ?? url.searchParams.get('password') ?? '';
  return { user, password };
}

class Handler {
  private readonly session: Session;
  private settingNames = new Set<string>();
  private version = '26.7.2.1';

  constructor(private readonly options: ChdbHttpServerOptions) {
    this.session = new Session(options.path);
  }

  async initialize(): Promise<void> {
    const names = await this.session.queryAsync('SELECT name FROM system.settings', { format: 'TSVRaw' });
    this.settingNames = new Set(names.text().split('\n').filter(Boolean));
    const version = await this.session.queryAsync('SELECT version()', { format: 'TSVRaw' });
    this.version = version.text().trim() || this.version;
  }

  close(): void {
    this.session.close();
  }

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const startedAt = process.hrtime.bigint();
    const url = new URL(request.url ?? '/', 'http://localhost');
    const queryId = url.searchParams.get('query_id') || randomUUID();
    const headers: Record<string, string> = {
      'X-ClickHouse-Server-Display-Name': 'chdb-test-server',
      'X-ClickHouse-Query-Id': queryId,
      'X-ClickHouse-Timezone': 'UTC',
    };
    try {
      if (url.pathname === '/ping' || url.pathname === '/replicas_status') {
        return this.send(response, 200, { 'Content-Type': 'text/html; charset=UTF-8' }, Buffer.from('Ok.\n'));
      }
      if (url.pathname !== '/') {
        return this.send(
          response,
          404,
          { 'Content-Type': 'text/plain; charset=UTF-8' },
          Buffer.from(`There is no handle ${url.pathname}\n\nUse / or /ping for health checks.\n`),
        );
      }
      this.authenticate(request, url);
      const body = decodeBody(await readBody(request), request.headers['content-encoding']);
      const urlQuery = url.searchParams.get('query');
      if (urlQuery === null && body.length === 0) {
        if (request.method === 'GET' || request.method === 'HEAD') {
          return this.send(
            response,
            200,
            { 'Content-Type': 'text/html; charset=UTF-8' },
            Buffer.from('Ok.\n'),
          );
        }
        throw new ClickHouseServerError(
          CODES.BAD_ARGUMENTS,
          'BAD_ARGUMENTS',
          'Empty query: the query goes in the "query" URL parameter or the request body',
        );
      }
      const query =
        urlQuery === null
          ? body.toString('utf8')
          : body.length
            ? `${urlQuery}\n${body.toString('utf8')}`
            : urlQuery;
      await this.checkDatabase(url.searchParams.get('database'));
      const settings = this.settingsOf(url);
      const parameters: Record<string, string> = {};
      for (const [key, value] of url.searchParams) {
        if (key.startsWith('param_')) parameters[key.slice('param_'.length)] = value;
      }
      const kind = statementKind(query);
      const readonly = request.method === 'GET' || Number(settings.readonly ?? 0) >= 1;
      if (readonly && !READ_ONLY_KINDS.has(kind)) {
        throw new ClickHouseServerError(
          CODES.READONLY,
          'READONLY',
          request.method === 'GET'
            ? 'Cannot execute query in readonly mode. For queries over HTTP, method GET implies readonly. You should use method POST for modifying queries'
            : 'Cannot execute query in readonly mode',
        );
      }
      const result =
        kind === 'INSERT'
          ? await this.insert(query, settings)
          : await this.select(query, kind, settings, parameters, url.searchParams.get('default_format'));
      const compress =
        url.searchParams.get('enable_http_compression') === '1' &&
        /\bgzip\b/i.test(String(request.headers['accept-encoding'] ?? ''));
      const summary = summaryHeader(result.summary, startedAt);
      this.send(
        response,
        200,
        {
          ...headers,
          'Content-Type': contentTypeOf(result.format),
          'X-ClickHouse-Format': result.format,
          'X-ClickHouse-Summary': summary,
          ...(compress ? { 'Content-Encoding': 'gzip' } : {}),
        },
        compress ? gzipSync(result.body) : result.body,
      );
    } catch (thrown) {
      const error = fromChdbError(thrown);
      const text = `Code: ${error.code}. DB::Exception: ${error.message}. (${error.type}) (version ${this.version})\n`;
      this.send(
        response,
        httpStatusOf(error.type),
        {
          ...headers,
          'Content-Type': 'text/plain; charset=UTF-8',
          'X-ClickHouse-Exception-Code': String(error.code),
        },
        Buffer.from(text),
      );
    }
  }

  private send(
    response: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: Buffer,
  ): void {
    // A client that went away gets nothing; the server carries on.
    if (response.destroyed || response.writableEnded) return;
    response.writeHead(status, { ...headers, 'Content-Length': String(body.length) });
    response.end(body);
  }

  private authenticate(request: IncomingMessage, url: URL): void {
    const { user, password } = credentialsOf(request, url);
    const expectedUser = this.options.user ?? 'default';
    const expectedPassword = this.options.user === undefined ? '' : (this.options.password ?? '');
    if (!sameText(user, expectedUser) || !sameText(password, expectedPassword)) {
      throw new ClickHouseServerError(
        CODES.AUTHENTICATION_FAILED,
        'AUTHENTICATION_FAILED',
        `${user}: Authentication failed: password is incorrect, or there is no user with such name`,
      );
    }
  }

  /**
   * Only the default database: requests share one chdb session, so a per-request default
   * database would leak into concurrent requests. The warehouse engine qualifies every name.
   */
  private async checkDatabase(database: string | null): Promise<void> {
    if (database === null || database === '' || database === 'default') return;
    const found = await this.session.queryBindAsync(
      'SELECT count() FROM system.databases WHERE name = {name:String}',
      { name: database },
      { format: 'TSVRaw' },
    );
    if (found.text().trim() === '0') {
      throw new ClickHouseServerError(
        CODES.UNKNOWN_DATABASE,
        'UNKNOWN_DATABASE',
        `Database ${database} does not exist`,
      );
    }
    throw new ClickHouseServerError(
      CODES.NOT_IMPLEMENTED,
      'NOT_IMPLEMENTED',
      `The test server runs queries in the database default only (asked for ${database}); qualify table names instead`,
    );
  }

  /** The request's settings: every URL parameter that is not reserved, each one checked. */
  private settingsOf(url: URL): Record<string, string> {
    const settings: Record<string, string> = {};
    for (const [key, value] of url.searchParams) {
      if (RESERVED.has(key) || key.startsWith('param_')) continue;
      if (!this.settingNames.has(key)) {
        throw new ClickHouseServerError(CODES.UNKNOWN_SETTING, 'UNKNOWN_SETTING', `Unknown setting '${key}'`);
      }
      settings[key] = value;
    }
    return settings;
  }

  private async select(
    query: string,
    kind: string,
    settings: Record<string, string>,
    parameters: Record<string, string>,
    defaultFormat: string | null,
  ): Promise<{ format: string; body: Buffer; summary: Summary }> {
    const taken = takeTrailingFormat(query);
    const format = taken.format ?? (defaultFormat || 'TabSeparated');
    // Only a SELECT takes a SETTINGS clause at its end; other statements (DDL) run without
    // the request's settings, which were checked above.
    if (!/^[A-Za-z0-9_]+$/.test(format)) {
      throw new ClickHouseServerError(CODES.UNKNOWN_FORMAT, 'UNKNOWN_FORMAT', `Unknown format ${format}`);
    }
    // The FORMAT goes back after the settings: only then do output settings
    // (output_format_json_quote_64bit_integers...) reach the engine's output format.
    const sql =
      kind === 'SELECT' || kind === 'WITH'
        ? `${withSelectSettings(taken.sql, settingsClause(settings))}\nFORMAT ${format}`
        : taken.sql;
    const result =
      Object.keys(parameters).length > 0
        ? await this.session.queryBindAsync(sql, bindingValues(sql, parameters), { format })
        : await this.session.queryAsync(sql, { format });
    const body = Buffer.from(result.bytes());
    const resultRows = LINE_FORMATS.test(format)
      ? body.toString('utf8').split('\n').filter(Boolean).length
      : 0;
    return {
      format,
      body,
      summary: {
        readRows: result.rowsRead,
        readBytes: result.bytesRead,
        writtenRows: 0,
        writtenBytes: 0,
        resultRows,
        resultBytes: body.length,
      },
    };
  }

  private async insert(
    query: string,
    settings: Record<string, string>,
  ): Promise<{ format: string; body: Buffer; summary: Summary }> {
    const statement = parseInsert(query);
    const own = statement ? parseSettingsClause(statement.settings) : undefined;
    const empty = { readRows: 0, readBytes: 0, resultRows: 0, resultBytes: 0 };
    if (
      statement?.format &&
      own &&
      RAW_INSERT_FORMATS.has(statement.format) &&
      /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?$/.test(statement.table) &&
      (statement.columns ?? []).every((column) => /^[A-Za-z0-9_]+$/.test(column))
    ) {
      const written = await this.session.insert({
        table: statement.table,
        values: Buffer.from(statement.data, 'utf8'),
        format: statement.format as RawInsertFormat,
        ...(statement.columns ? { columns: statement.columns } : {}),
        settings: { ...settings, ...own },
      });
      return {
        format: 'TabSeparated',
        body: Buffer.alloc(0),
        summary: { ...empty, writtenRows: written.rowsWritten, writtenBytes: written.bytesWritten },
      };
    }
    // VALUES, INSERT ... SELECT and other forms run as they are, the request's settings in a
    // SETTINGS clause after the table (where the grammar takes one).
    const clause = settingsClause(settings);
    const sql = clause
      ? query.replace(
          /^(\s*INSERT\s+INTO\s+(?:TABLE\s+)?(?:`[^`]+`|[\w.]+)(?:\.(?:`[^`]+`|\w+))?\s*(?:\([^)]*\))?)/i,
          `$1 SETTINGS ${clause} `,
        )
      : query;
    await this.session.queryAsync(sql, { format: 'TabSeparated' });
    return {
      format: 'TabSeparated',
      body: Buffer.alloc(0),
      summary: { ...empty, writtenRows: 0, writtenBytes: 0 },
    };
  }
}

/** Starts the server; resolves once it listens. */
export async function startChdbHttpServer(options: ChdbHttpServerOptions): Promise<ChdbHttpServer> {
  const handler = new Handler(options);
  await handler.initialize();
  const server: Server = createServer((request, response) => {
    handler.handle(request, response).catch((error: unknown) => {
      process.stderr.write(`chdb-http-server: ${error instanceof Error ? error.stack : String(error)}\n`);
      if (!response.headersSent && !response.destroyed) {
        response.writeHead(500);
        response.end();
      }
    });
  });
  // ClickHouse keeps an idle HTTP connection 10 s (keep_alive_timeout); Node's default is 5 s.
  server.keepAliveTimeout = 10_000;
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          handler.close();
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
