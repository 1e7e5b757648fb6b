// Checks docker/ without a Docker engine: one multi-stage Dockerfile per deployable that
// prunes with the same `pnpm deploy` as tools/deploy/check-pruned-install.sh, runs as a
// non-root user, has a HEALTHCHECK on the port the service really listens on and starts a
// script the build produces; that the control plane's pruned install carries the built console;
// and docker/compose.yaml, whose environment for each service must
// pass that service's own config schema; that every image, and engines.node of the root and the
// three services, derive from the one Node version of .node-version, and compose's broker from
// tools/kafka/pom.xml's Kafka version; that compose publishes ports on 127.0.0.1 only and holds
// no secret (each is ${NAME:?...}, generated into docker/.env by docker/generate-secrets.sh,
// which runs here into a scratch file). Then it breaks copies in known ways and requires each
// break to be reported. Needs the workspace built. Usage: node check-container-files.mjs
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { splitNodeCommand } from './node-flags.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const cp = require(path.join(repo, 'apps/control-plane/dist/config.js'));
const { deliveryKinds: destinationKinds } = require(path.join(repo, 'libs/catalog/dist/index.js'));
// Image -> the workspace package it prunes, the schema its process reads, the port variable.
const images = {
  'control-plane': { app: 'control-plane', schema: cp.controlPlaneConfigSchema, port: 'PORT' },
  migrations: { app: 'control-plane', schema: cp.migrateConfigSchema },
  ingestion: {
    app: 'ingestion',
    schema: require(path.join(repo, 'apps/ingestion/dist/config.js')).ingestionConfigSchema,
    port: 'PORT',
  },
  delivery: {
    app: 'delivery',
    schema: require(path.join(repo, 'apps/delivery/dist/config.js')).deliveryConfigSchema,
    port: 'DELIVERY_HTTP_PORT',
  },
};
const pnpmVersion = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')).packageManager.split(
  '@',
)[1];

// The one declared Node version; images pin its minor (the image's patch releases are security
// fixes), engines accept it and later releases of its major only.
const nodeVersion = readFileSync(path.join(repo, '.node-version'), 'utf8').trim();
const [nodeMajor, nodeMinor] = nodeVersion.split('.').map(Number);
const nodeImage = `node:${nodeMajor}.${nodeMinor}-bookworm-slim`;
const enginesRange = `>=${nodeVersion} <${nodeMajor + 1}`;
const kafkaVersion = /<kafka\.version>(.+)<\/kafka\.version>/.exec(
  readFileSync(path.join(repo, 'tools/kafka/pom.xml'), 'utf8'),
)[1];

/** Instructions of a Dockerfile, continuation lines joined, comments dropped, split in stages. */
function stagesOf(text) {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages = [];
  for (const line of lines) {
    const [word, ...rest] = line.split(/\s+/);
    const instruction = { op: word.toUpperCase(), args: rest.join(' ') };
    if (instruction.op === 'FROM') stages.push([]);
    (stages.at(-1) ?? (stages[0] = [])).push(instruction);
  }
  return stages;
}

function dockerfileProblems(name, text) {
  const { app, schema, port } = images[name];
  const problems = [];
  const fail = (m) => problems.push(`docker/${name}.Dockerfile: ${m}`);
  const stages = stagesOf(text);
  const all = stages.flat();
  if (stages.length < 2) fail('must be multi-stage (build, then runtime)');
  const deploy = all.find(
    (i) => i.op === 'RUN' && /pnpm --filter (\S+) deploy --legacy --prod \/out/.test(i.args),
  );
  const pruned = deploy && /pnpm --filter (\S+) deploy/.exec(deploy.args)[1];
  if (pruned !== `@pipeline/${app}`)
    fail(`must prune @pipeline/${app} with pnpm deploy --legacy --prod /out (found ${pruned})`);
  const arg = all.find((i) => i.op === 'ARG' && i.args.startsWith('PNPM_VERSION='));
  if (arg?.args !== `PNPM_VERSION=${pnpmVersion}`)
    fail(`PNPM_VERSION must be ${pnpmVersion} (package.json packageManager)`);
  const nodeArg = all.find((i) => i.op === 'ARG' && i.args.startsWith('NODE_IMAGE='))?.args;
  if (nodeArg !== `NODE_IMAGE=${nodeImage}`)
    fail(`NODE_IMAGE must be ${nodeImage} (.node-version ${nodeVersion}; found ${nodeArg})`);
  const bases = all.filter((i) => i.op === 'FROM').map((i) => i.args.split(/\s+/)[0]);
  if (bases.some((base) => base !== '${NODE_IMAGE}'))
    fail(`every stage must start FROM \${NODE_IMAGE} (found ${bases.join(', ')})`);
  const runtime = stages.at(-1) ?? [];
  if (runtime.some((i) => i.op === 'RUN' && /pnpm|npm (ci|install)/.test(i.args)))
    fail('the runtime stage must not install packages');
  if (!runtime.some((i) => i.op === 'COPY' && /--from=\S+ \/out /.test(i.args)))
    fail('the runtime stage must copy only the pruned /out');
  const user = runtime.filter((i) => i.op === 'USER').at(-1)?.args;
  if (!user || !/^[1-9]\d*(:\d+)?$/.test(user))
    fail(`the runtime stage must end as a numeric non-root USER (found ${user})`);
  const healthcheck = runtime.find((i) => i.op === 'HEALTHCHECK')?.args;
  if (port) {
    const defaultPort = schema.shape[port].parse(undefined);
    if (
      !healthcheck ||
      !healthcheck.includes(`process.env.${port} || ${defaultPort}`) ||
      !healthcheck.includes("'/health'")
    ) {
      fail(`HEALTHCHECK must GET /health on ${port} (default ${defaultPort})`);
    }
    if (!runtime.some((i) => i.op === 'EXPOSE' && i.args === String(defaultPort)))
      fail(`must EXPOSE ${defaultPort}`);
  } else if (healthcheck !== 'NONE') {
    fail('a one-shot image declares HEALTHCHECK NONE');
  }
  const exec = (op) => {
    const found = runtime.filter((i) => i.op === op).at(-1);
    return found ? JSON.parse(found.args) : undefined;
  };
  const command = [...(exec('ENTRYPOINT') ?? []), ...(exec('CMD') ?? [])];
  const { script } = splitNodeCommand(command);
  if (!script || !existsSync(path.join(repo, 'apps', app, script)))
    fail(`must start a script the build produces (found ${command.join(' ')})`);
  // The Deployments pass the kind as `args`, which replace CMD only.
  const entrypoint = splitNodeCommand(exec('ENTRYPOINT') ?? []);
  if (
    name === 'delivery' &&
    (entrypoint.script !== 'dist/main.js' || exec('ENTRYPOINT').at(-1) !== 'dist/main.js')
  )
    fail('ENTRYPOINT must be node [flags] dist/main.js');
  return problems;
}

/**
 * What docker/generate-secrets.sh writes to docker/.env for this compose file: run into a
 * scratch file, so the values the services are checked with are the ones the script makes.
 */
function generatedSecrets() {
  const dir = mkdtempSync(path.join(tmpdir(), 'compose-secrets-'));
  try {
    const file = path.join(dir, '.env');
    execFileSync('sh', [path.join(repo, 'docker/generate-secrets.sh'), file], { stdio: 'ignore' });
    return Object.fromEntries(
      readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const secrets = generatedSecrets();

/** ${NAME:-default} as compose reads it with NAME unset; ${NAME:?message} from docker/.env. */
const substitute = (value) =>
  String(value)
    .replace(/\$\{([A-Z0-9_]+):-([^}]*)\}/g, '$2')
    .replace(/\$\{([A-Z0-9_]+):\?[^}]*\}/g, (whole, name) => secrets[name] ?? whole);

/** A variable that holds a secret, by its name. */
const secretName = /TOKEN|SECRET|PASSWORD|_KEYS?$/;
/** A value that is exactly one required variable, filled from docker/.env. */
const required = /^\$\{[A-Z0-9_]+:\?[^}]*\}$/;

/**
 * Nothing well known: a secret variable is only ever ${NAME:?...} (no default, no literal), a
 * URL's password too, and each one the script generates. Published ports bind 127.0.0.1 only:
 * the stack is for one machine, and Docker's own rules let a published port past the host's
 * firewall.
 */
function exposureProblems(name, service, fail) {
  for (const port of service.ports ?? []) {
    const hostIp = typeof port === 'object' ? port.host_ip : /^(.*):[^:]+:[^:]+$/.exec(String(port))?.[1];
    if (hostIp !== '127.0.0.1')
      fail(`${name}: port ${JSON.stringify(port)} must be published on 127.0.0.1 only`);
  }
  for (const [key, raw] of Object.entries(service.environment ?? {})) {
    const value = String(raw);
    if (secretName.test(key) && !required.test(value))
      fail(`${name}: ${key} must be \${${key}:?...} from docker/.env, not a literal or a default`);
    const password = /^[a-z]+:\/\/[^:/@]+:([^@]*)@/.exec(value)?.[1];
    if (password !== undefined && !required.test(password))
      fail(`${name}: ${key} has a literal password; use \${NAME:?...} from docker/.env`);
    for (const [, variable] of value.matchAll(/\$\{([A-Z0-9_]+):\?/g))
      if (!(variable in secrets)) fail(`${name}: docker/generate-secrets.sh does not generate ${variable}`);
  }
}

function composeProblems(compose) {
  const problems = [];
  const fail = (m) => problems.push(`docker/compose.yaml: ${m}`);
  const services = compose.services ?? {};
  for (const [name, service] of Object.entries(services)) exposureProblems(name, service, fail);

  for (const service of ['postgres', 'redis', 'kafka']) if (!services[service]) fail(`no ${service} service`);
  if (!/KRaft|broker,controller/.test(JSON.stringify(services.kafka ?? {})))
    fail('kafka must run in KRaft mode');
  if (services.kafka?.image !== `apache/kafka:${kafkaVersion}`)
    fail(`kafka must be apache/kafka:${kafkaVersion}, the version tools/kafka/pom.xml tests against`);
  const built = new Set();
  for (const [name, service] of Object.entries(services)) {
    if (!service.build) continue;
    const image = /^docker\/(.+)\.Dockerfile$/.exec(service.build.dockerfile ?? '')?.[1];
    if (!images[image] || service.build.context !== '..') {
      fail(`${name}: build must be context .. with one of docker/*.Dockerfile`);
      continue;
    }
    built.add(image);
    const env = Object.fromEntries(
      Object.entries(service.environment ?? {}).map(([k, v]) => [k, substitute(v)]),
    );
    const known = Object.keys(images[image].schema.shape);
    for (const key of Object.keys(env))
      if (!known.includes(key)) fail(`${name}: ${key} is not read by ${image}`);
    const parsed = images[image].schema.safeParse(env);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) fail(`${name}: ${issue.path.join('.')}: ${issue.message}`);
    }
    if (image === 'delivery') {
      const [flag, kind] = service.command ?? [];
      if (flag !== '--destination' || !destinationKinds.includes(kind))
        fail(`${name}: command must be --destination <kind>`);
    }
    const shutdownMs = Number(env.SHUTDOWN_TIMEOUT_MS ?? 25000);
    if (images[image].port && !(parseInt(service.stop_grace_period, 10) * 1000 > shutdownMs)) {
      fail(`${name}: stop_grace_period must exceed SHUTDOWN_TIMEOUT_MS (${shutdownMs} ms)`);
    }
  }
  for (const image of Object.keys(images))
    if (!built.has(image)) fail(`no service builds docker/${image}.Dockerfile`);
  if (services['control-plane']?.depends_on?.migrate?.condition !== 'service_completed_successfully') {
    fail('control-plane must wait for migrate to complete');
  }
  return problems;
}

const readPackage = (dir) => JSON.parse(readFileSync(path.join(repo, dir, 'package.json'), 'utf8'));
const packages = {
  root: readPackage('.'),
  controlPlane: readPackage('apps/control-plane'),
  ingestion: readPackage('apps/ingestion'),
  delivery: readPackage('apps/delivery'),
  console: readPackage('apps/console'),
};

/** engines.node of the root and of each service, which refuse other majors at start-up. */
function enginesProblems(pkgs) {
  const problems = [];
  for (const key of ['root', 'controlPlane', 'ingestion', 'delivery']) {
    const found = pkgs[key].engines?.node;
    if (found !== enginesRange)
      problems.push(
        `${pkgs[key].name}: engines.node must be "${enginesRange}" (.node-version; found ${found})`,
      );
  }
  return problems;
}

/**
 * The control plane image serves the console (docs/console.md): `pnpm deploy --prod` copies it
 * only as a production dependency of the control plane, and only its `files`, which must hold
 * the built dist/ (the build stage builds it; here the workspace's build must have made it).
 */
function consoleProblems({ controlPlane, console: consolePackage }) {
  const problems = [];
  const fail = (m) => problems.push(`apps/console: ${m}`);
  if (controlPlane.dependencies?.['@pipeline/console'] !== 'workspace:*')
    fail('@pipeline/console must be a production dependency (workspace:*) of @pipeline/control-plane');
  if (!(consolePackage.files ?? []).includes('dist')) fail('package.json files must include dist');
  if (!existsSync(path.join(repo, 'apps/console/dist/index.html')))
    fail('dist/index.html is missing: build @pipeline/console');
  return problems;
}

function problemsOf(dockerfiles, compose, pkgs = packages) {
  return [
    ...Object.entries(dockerfiles).flatMap(([name, text]) => dockerfileProblems(name, text)),
    ...composeProblems(compose),
    ...consoleProblems(pkgs),
    ...enginesProblems(pkgs),
  ];
}

const dockerfiles = {};
const missing = [];
for (const name of Object.keys(images)) {
  const file = path.join(repo, 'docker', `${name}.Dockerfile`);
  if (existsSync(file)) dockerfiles[name] = readFileSync(file, 'utf8');
  else missing.push(`docker/${name}.Dockerfile is missing`);
}
const compose = YAML.parse(readFileSync(path.join(repo, 'docker/compose.yaml'), 'utf8'), { merge: true });
const problems = [...missing, ...problemsOf(dockerfiles, compose)];
for (const p of problems) console.error(p);

const breaks = [
  [
    'an image running as root',
    (d) => {
      d.ingestion = d.ingestion.replace('USER 10001:10001', 'USER root');
    },
  ],
  [
    'a pnpm version that drifted',
    (d) => {
      d.delivery = d.delivery.replace(`PNPM_VERSION=${pnpmVersion}`, 'PNPM_VERSION=9.0.0');
    },
  ],
  [
    'a HEALTHCHECK on the wrong port',
    (d) => {
      d['control-plane'] = d['control-plane'].replace('process.env.PORT || 3000', 'process.env.PORT || 8080');
    },
  ],
  [
    'the delivery kind in CMD only',
    (d) => {
      d.delivery = d.delivery.replace(/^ENTRYPOINT .*$/m, '');
    },
  ],
  [
    'an image that starts node with flags and no script',
    (d) => {
      d.ingestion = d.ingestion.replace(/^CMD \[.*$/m, 'CMD ["node", "--max-semi-space-size=16"]');
    },
  ],
  [
    'a misspelt compose variable',
    (_, c) => {
      c.services.ingestion.environment.KAFKA_BROKER = 'kafka:9092';
    },
  ],
  [
    'compose without the service token',
    (_, c) => {
      delete c.services['control-plane'].environment.INTERNAL_TOKEN_INGESTION;
    },
  ],
  [
    'a port published on all interfaces',
    (_, c) => {
      c.services['control-plane'].ports = ['3000:3000'];
    },
  ],
  [
    'a metrics port published on 0.0.0.0',
    (_, c) => {
      c.services.ingestion.ports = [{ target: 9464, published: 9464, host_ip: '0.0.0.0' }];
    },
  ],
  [
    'a well-known default for the service token',
    (_, c) => {
      c.services.ingestion.environment.INTERNAL_SERVICE_TOKEN =
        '${INTERNAL_SERVICE_TOKEN:-local-development-service-token-0123456789}';
    },
  ],
  [
    'a literal credentials key',
    (_, c) => {
      c.services['control-plane'].environment.CREDENTIALS_ENCRYPTION_KEYS =
        'local:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
    },
  ],
  [
    'a literal database password in a URL',
    (_, c) => {
      c.services.migrate.environment.DATABASE_URL = 'postgres://postgres:postgres@postgres:5432/pipeline';
    },
  ],
  [
    'a literal PostgreSQL password',
    (_, c) => {
      c.services.postgres.environment.POSTGRES_PASSWORD = 'postgres';
    },
  ],
  [
    'a control plane that does not wait for migrations',
    (_, c) => {
      delete c.services['control-plane'].depends_on;
    },
  ],
];
breaks.push([
  'the console as a development dependency of the control plane',
  (_, __, p) => {
    delete p.controlPlane.dependencies['@pipeline/console'];
    p.controlPlane.devDependencies['@pipeline/console'] = 'workspace:*';
  },
]);
breaks.push(
  [
    'an image on another Node',
    (d) => {
      d.migrations = d.migrations.replace(`NODE_IMAGE=${nodeImage}`, 'NODE_IMAGE=node:22-bookworm-slim');
    },
  ],
  [
    'a stage that bypasses NODE_IMAGE',
    (d) => {
      d.delivery = d.delivery.replace(
        'FROM ${NODE_IMAGE} AS runtime',
        `FROM node:${nodeMajor}-alpine AS runtime`,
      );
    },
  ],
  [
    'engines that accept an older major',
    (_, __, p) => {
      p.ingestion.engines = { node: `>=${nodeMajor - 4}` };
    },
  ],
  [
    'compose on another Kafka than the tests',
    (_, c) => {
      c.services.kafka.image = 'apache/kafka:3.7.0';
    },
  ],
);
let unnoticed = 0;
for (const [name, mutate] of breaks) {
  const d = { ...dockerfiles };
  const c = structuredClone(compose);
  const p = structuredClone(packages);
  mutate(d, c, p);
  if (problemsOf(d, c, p).length === 0) {
    unnoticed += 1;
    console.error(`the checks did not notice ${name}`);
  }
}
const ok = problems.length === 0 && unnoticed === 0;
console.log(
  ok
    ? `container files: ${Object.keys(dockerfiles).length} Dockerfiles and ${Object.keys(compose.services).length} compose services valid; each of ${breaks.length} known breaks is reported`
    : 'container files: FAILED',
);
process.exit(ok ? 0 : 1);
