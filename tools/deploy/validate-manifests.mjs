// Renders every kustomization under deploy/ with `kubectl kustomize`, validates each object
// against the Kubernetes schemas (kubernetes-models), and checks what the manifests promise:
// every variable the services' config schemas read is set for each process, every reference
// resolves, probes, resources, graceful termination, one Deployment per destination kind, the
// HPA, PDBs, NetworkPolicies and the Ingress edge limits. Then it breaks a copy of the rendered
// manifests in known ways and requires each break to be reported (the checks can fail).
// Needs the workspace built (the schemas are read from dist). Usage: node validate-manifests.mjs
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const kubectl = process.env.KUBECTL || 'kubectl';

// The configuration each image's process reads, straight from the services' zod schemas.
const keysOf = (schema) => Object.keys(schema.shape).sort();
const cp = require(path.join(repo, 'apps/control-plane/dist/config.js'));
const ingestionConfig = require(path.join(repo, 'apps/ingestion/dist/config.js'));
const schemas = {
  'control-plane': keysOf(cp.controlPlaneConfigSchema),
  migrations: keysOf(cp.migrateConfigSchema),
  ingestion: keysOf(ingestionConfig.ingestionConfigSchema),
  delivery: keysOf(require(path.join(repo, 'apps/delivery/dist/config.js')).deliveryConfigSchema),
};
// Every kind and forwarding app type comes from the app catalog.
const { deliveryKinds: destinationKinds, forwardingAppTypes } = require(
  path.join(repo, 'libs/catalog/dist/index.js'),
);
const forwardingKinds = new Set(forwardingAppTypes);
// The kinds that call the control plane, each with its own token: the forwarding consumers (tenant
// lookups) and the warehouse consumer (where each account's warehouse is). The log consumer never does.
const controlPlaneCallers = new Set([...forwardingAppTypes, 'warehouse']);
const listenPort = { 'control-plane': 'PORT', ingestion: 'PORT', delivery: 'DELIVERY_HTTP_PORT' };

function render(dir) {
  const out = execFileSync(kubectl, ['kustomize', path.join(repo, dir)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 << 20,
  });
  return YAML.parseAllDocuments(out)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${dir}: ${doc.errors[0].message}`);
      return doc.toJS();
    })
    .filter(Boolean);
}

async function schemaProblems(objects) {
  const problems = [];
  for (const object of objects) {
    const [group, version] = object.apiVersion.includes('/')
      ? object.apiVersion.split('/')
      : ['', object.apiVersion];
    const modulePath = group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`;
    const id = `${object.kind}/${object.metadata?.name}`;
    let Model;
    try {
      Model = (await import(modulePath))[object.kind];
    } catch {
      Model = undefined;
    }
    if (!Model) {
      problems.push(`${id}: no schema for ${object.apiVersion} ${object.kind}`);
      continue;
    }
    try {
      new Model(object).validate();
    } catch (error) {
      problems.push(`${id}: ${error.message}`);
    }
  }
  return problems;
}

const imageRole = (image) => {
  const base = image.split('@')[0].replace(/:[^/]*$/, '');
  return Object.keys(schemas).find(
    (role) => base === `pipeline/${role}` || base.endsWith(`/pipeline/${role}`),
  );
};
const durationMs = (value) => Number(value);

/** The checks beyond the schemas; `objects` is one environment: overlay + migrate + secrets template. */
function contractProblems(objects, secrets) {
  const problems = [];
  const fail = (message) => problems.push(message);
  const byKind = (kind) => objects.filter((o) => o.kind === kind);
  const find = (kind, name) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  const secretKeys = new Map(
    secrets.map((s) => [s.metadata.name, new Set(Object.keys({ ...s.data, ...s.stringData }))]),
  );
  const matches = (selector, labels) =>
    Object.entries(selector ?? {}).every(([key, value]) => labels?.[key] === value);
  const workloads = [...byKind('Deployment'), ...byKind('Job')];
  const seenRoles = new Set();
  const operatorListeners = [];
  const deliveryKinds = new Map();

  for (const workload of workloads) {
    const id = `${workload.kind}/${workload.metadata.name}`;
    const pod = workload.spec.template.spec;
    if (pod.securityContext?.runAsNonRoot !== true) fail(`${id}: pod must set runAsNonRoot`);
    for (const container of pod.containers) {
      const cid = `${id} container ${container.name}`;
      const role = imageRole(container.image);
      if (!role) {
        fail(`${cid}: image ${container.image} is none of the pipeline images`);
        continue;
      }
      seenRoles.add(role);
      if (workload.kind === 'Job' && role !== 'migrations') fail(`${cid}: only the migrations run as a Job`);
      // Every variable, and its value where a ConfigMap or a literal sets it.
      const env = new Map();
      for (const from of container.envFrom ?? []) {
        if (from.configMapRef) {
          const map = find('ConfigMap', from.configMapRef.name);
          if (!map) fail(`${cid}: ConfigMap ${from.configMapRef.name} is not in the manifests`);
          for (const [key, value] of Object.entries(map?.data ?? {})) env.set(key, value);
        } else if (from.secretRef) {
          const keys = secretKeys.get(from.secretRef.name);
          if (!keys) fail(`${cid}: Secret ${from.secretRef.name} is not in deploy/secrets`);
          for (const key of keys ?? []) env.set(key, undefined);
        }
      }
      for (const variable of container.env ?? []) {
        const ref = variable.valueFrom?.secretKeyRef ?? variable.valueFrom?.configMapKeyRef;
        if (variable.valueFrom?.secretKeyRef && !secretKeys.get(ref.name)?.has(ref.key)) {
          fail(
            `${cid}: ${variable.name} refers to Secret ${ref.name} key ${ref.key}, which deploy/secrets does not define`,
          );
        }
        if (variable.valueFrom?.configMapKeyRef && !(ref.key in (find('ConfigMap', ref.name)?.data ?? {}))) {
          fail(
            `${cid}: ${variable.name} refers to ConfigMap ${ref.name} key ${ref.key}, which does not exist`,
          );
        }
        env.set(variable.name, variable.value);
      }
      if (role === 'ingestion') {
        const tokenKey = (container.env ?? []).find((e) => e.name === 'INTERNAL_SERVICE_TOKEN')?.valueFrom
          ?.secretKeyRef?.key;
        if (tokenKey !== 'INTERNAL_TOKEN_INGESTION')
          fail(`${cid}: INTERNAL_SERVICE_TOKEN must be Secret key INTERNAL_TOKEN_INGESTION, not ${tokenKey}`);
      }
      // Hosted ingestion reads no warehouse: its credentials must not be mounted there.
      const hosted = role === 'ingestion' && env.get('MANAGED_AUTH_ENABLED') === 'true';
      // Nor does any delivery kind but the warehouse one: WAREHOUSE_URL holds the platform
      // warehouse's password, and a forwarding consumer parses answers from tenants' servers.
      const deliveryArgs = role === 'delivery' ? (container.args ?? []) : [];
      const deliveryKind = deliveryArgs.includes('--destination')
        ? deliveryArgs[deliveryArgs.indexOf('--destination') + 1]
        : undefined;
      const warehouseless = role === 'delivery' && deliveryKind !== 'warehouse';
      if (warehouseless && env.has('WAREHOUSE_URL'))
        fail(
          `${cid}: WAREHOUSE_URL (the platform warehouse's password) is mounted in delivery kind ${deliveryKind}; only the warehouse kind reads it`,
        );
      const wanted = hosted
        ? schemas.ingestion.filter((key) => !ingestionConfig.staticModeOnlyVariables.includes(key))
        : warehouseless
          ? schemas.delivery.filter((key) => key !== 'WAREHOUSE_URL')
          : schemas[role];
      for (const key of wanted) if (!env.has(key)) fail(`${cid}: ${key} (read by ${role}) is not set`);
      for (const key of env.keys())
        if (!wanted.includes(key) && !(warehouseless && key === 'WAREHOUSE_URL'))
          fail(`${cid}: ${key} is not read by ${role}`);

      if (role === 'delivery') {
        const args = container.args ?? [];
        const kind = args[args.indexOf('--destination') + 1];
        if (!args.includes('--destination') || !destinationKinds.includes(kind)) {
          fail(`${cid}: args must be --destination <kind>, got ${JSON.stringify(args)}`);
        } else {
          if (deliveryKinds.has(kind)) fail(`${cid}: a second Deployment for kind ${kind}`);
          deliveryKinds.set(kind, workload);
          // Each caller presents its own token: the control plane scopes it to that kind's credentials.
          const tokenKey = (container.env ?? []).find((e) => e.name === 'INTERNAL_SERVICE_TOKEN')?.valueFrom
            ?.secretKeyRef?.key;
          const ownKey = controlPlaneCallers.has(kind)
            ? `INTERNAL_TOKEN_DELIVERY_${kind.toUpperCase()}`
            : undefined;
          if (tokenKey !== ownKey)
            fail(
              `${cid}: INTERNAL_SERVICE_TOKEN must be ${ownKey ? `Secret key ${ownKey}` : 'empty'}, not ${tokenKey}`,
            );
          const label = workload.spec.template.metadata.labels?.['pipeline.internal-api-client'] === 'true';
          if (label !== controlPlaneCallers.has(kind)) {
            fail(
              `${cid}: pipeline.internal-api-client must be ${controlPlaneCallers.has(kind)} for kind ${kind}`,
            );
          }
        }
      }
      if (workload.kind !== 'Deployment') continue;
      const port = Number(env.get(listenPort[role]));
      const named = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));
      // Liveness checks the process alone (a restart cures no dependency), readiness its
      // dependencies (docs/operations.md, "Probes").
      for (const [probeName, probePath] of [
        ['readinessProbe', '/readyz'],
        ['livenessProbe', '/livez'],
      ]) {
        const probe = container[probeName]?.httpGet;
        const probePort = typeof probe?.port === 'string' ? named.get(probe.port) : probe?.port;
        if (probe?.path !== probePath) fail(`${cid}: ${probeName} must GET ${probePath}`);
        else if (probePort !== port)
          fail(`${cid}: ${probeName} port ${probePort} is not ${listenPort[role]}=${port}`);
      }
      if (role === 'control-plane') {
        // The operator API's own listener: a container port, never PORT, reached through
        // ClusterIP Services only (checked with the Ingress below).
        const operatorPort = Number(env.get('OPERATOR_PORT'));
        if (!(operatorPort > 0) || operatorPort === port)
          fail(`${cid}: OPERATOR_PORT ${env.get('OPERATOR_PORT')} must be a port other than PORT=${port}`);
        else if (![...named.values()].includes(operatorPort))
          fail(`${cid}: OPERATOR_PORT ${operatorPort} is not a container port`);
        operatorListeners.push({ workload, operatorPort, named });
      }
      if (role === 'ingestion') {
        // The Ingress routes every path of PORT: /metrics must be on a port of its own that no
        // Service routes (so no Ingress can).
        const metricsPort = Number(env.get('METRICS_PORT'));
        if (!(metricsPort > 0) || metricsPort === port)
          fail(`${cid}: METRICS_PORT ${env.get('METRICS_PORT')} must be a port other than PORT=${port}`);
        for (const service of byKind('Service').filter((x) =>
          matches(x.spec.selector, workload.spec.template.metadata.labels),
        )) {
          for (const servicePort of service.spec.ports ?? []) {
            const target =
              typeof servicePort.targetPort === 'string'
                ? named.get(servicePort.targetPort)
                : (servicePort.targetPort ?? servicePort.port);
            if (target === metricsPort)
              fail(`Service/${service.metadata.name}: routes ingestion's METRICS_PORT ${metricsPort}`);
          }
        }
      }
      for (const part of ['requests', 'limits']) {
        for (const resource of ['cpu', 'memory']) {
          if (!container.resources?.[part]?.[resource]) fail(`${cid}: resources.${part}.${resource} missing`);
        }
      }
      const shutdownMs = durationMs(env.get('SHUTDOWN_TIMEOUT_MS') ?? 25000);
      const preStop = container.lifecycle?.preStop?.exec?.command;
      const preStopMs = preStop?.[0] === 'sleep' ? Number(preStop[1]) * 1000 : 0;
      const graceMs = (pod.terminationGracePeriodSeconds ?? 30) * 1000;
      if (!(graceMs > shutdownMs + preStopMs)) {
        fail(
          `${cid}: terminationGracePeriodSeconds ${graceMs / 1000} s must exceed SHUTDOWN_TIMEOUT_MS ${shutdownMs} ms + preStop ${preStopMs} ms`,
        );
      }
    }
  }
  for (const role of Object.keys(schemas))
    if (!seenRoles.has(role)) fail(`no workload runs the ${role} image`);
  for (const kind of destinationKinds)
    if (!deliveryKinds.has(kind)) fail(`no Deployment for delivery kind ${kind}`);

  const deployments = byKind('Deployment');
  const podsOf = (selector) =>
    [...deployments, ...byKind('Job')].filter((w) => matches(selector, w.spec.template.metadata.labels));
  const hpa = byKind('HorizontalPodAutoscaler').find((h) => h.spec.scaleTargetRef.name === 'ingestion');
  if (!hpa || hpa.spec.scaleTargetRef.kind !== 'Deployment' || !find('Deployment', 'ingestion'))
    fail('no HorizontalPodAutoscaler for the ingestion Deployment');
  for (const pdb of byKind('PodDisruptionBudget')) {
    if (podsOf(pdb.spec.selector.matchLabels).length === 0)
      fail(`PodDisruptionBudget/${pdb.metadata.name} selects no pods`);
  }
  for (const name of ['control-plane', 'ingestion']) {
    const target = find('Deployment', name);
    if (
      target &&
      !byKind('PodDisruptionBudget').some((p) =>
        matches(p.spec.selector.matchLabels, target.spec.template.metadata.labels),
      )
    ) {
      fail(`no PodDisruptionBudget covers ${name}`);
    }
  }
  for (const service of byKind('Service')) {
    if (podsOf(service.spec.selector).length === 0) fail(`Service/${service.metadata.name} selects no pods`);
  }

  // The control plane's internal endpoints: only ingestion and the forwarding consumers.
  const cpPolicy = byKind('NetworkPolicy').find(
    (n) =>
      find('Deployment', 'control-plane') &&
      matches(
        n.spec.podSelector.matchLabels,
        find('Deployment', 'control-plane').spec.template.metadata.labels,
      ) &&
      Object.keys(n.spec.podSelector.matchLabels ?? {}).length > 0,
  );
  if (
    !byKind('NetworkPolicy').some(
      (n) =>
        Object.keys(n.spec.podSelector.matchLabels ?? {}).length === 0 &&
        n.spec.policyTypes?.includes('Ingress') &&
        !n.spec.ingress,
    )
  ) {
    fail('no default-deny ingress NetworkPolicy');
  }
  if (!cpPolicy) fail('no NetworkPolicy for the control plane');
  else {
    const allowed = new Set();
    for (const rule of cpPolicy.spec.ingress ?? []) {
      if (!rule.from) fail('NetworkPolicy/control-plane: a rule without `from` admits every pod');
      for (const peer of rule.from ?? []) {
        if (peer.ipBlock) fail('NetworkPolicy/control-plane: ipBlock peers are not allowed');
        if (peer.podSelector && !peer.namespaceSelector)
          for (const w of podsOf(peer.podSelector.matchLabels ?? {})) allowed.add(w.metadata.name);
      }
    }
    const expected = new Set([
      'ingestion',
      ...[...deliveryKinds].filter(([k]) => controlPlaneCallers.has(k)).map(([, w]) => w.metadata.name),
    ]);
    const show = (set) => [...set].sort().join(', ');
    if (show(allowed) !== show(expected))
      fail(
        `NetworkPolicy/control-plane admits pods [${show(allowed)}], expected exactly [${show(expected)}]`,
      );
  }

  // The edge: SDK traffic limits, the SDK file's cache, no route to /internal.
  const ingresses = byKind('Ingress');
  const routes = ingresses.flatMap((ing) =>
    ing.spec.rules.flatMap((r) => r.http.paths.map((p) => ({ ing, ...p, service: p.backend.service.name }))),
  );
  for (const route of routes) {
    if (!find('Service', route.service))
      fail(`Ingress/${route.ing.metadata.name}: backend Service ${route.service} does not exist`);
  }
  const collect = routes.find((r) => r.service === 'ingestion' && r.path === '/');
  const notes = collect?.ing.metadata.annotations ?? {};
  if (!collect) fail('no Ingress routes / to ingestion');
  else {
    if (notes['nginx.ingress.kubernetes.io/proxy-body-size'] !== '2m')
      fail('ingestion Ingress: body limit must be 2m');
    if (!(Number(notes['nginx.ingress.kubernetes.io/limit-rps']) > 0))
      fail('ingestion Ingress: no per-IP request rate limit');
  }
  // Snippet annotations run raw nginx configuration and must be allowed controller-wide
  // (CVE-2025-1974); headers such as the SDK's Cache-Control are set by the services instead.
  for (const ing of ingresses) {
    for (const key of Object.keys(ing.metadata.annotations ?? {})) {
      if (/snippet$/.test(key))
        fail(`Ingress/${ing.metadata.name}: ${key} needs snippet annotations allowed`);
    }
  }
  for (const route of routes.filter((r) => r.service === 'control-plane')) {
    if (
      '/internal/v1/write-keys/resolve'.startsWith(route.path.replace(/\/$/, '') + '/') ||
      route.path === '/'
    ) {
      fail(
        `Ingress/${route.ing.metadata.name}: path ${route.path} exposes the control plane's /internal endpoints`,
      );
    }
    // The public API, its reference and the console only: never /metrics, /health or anything
    // added later.
    if (!/^\/(api|docs|console)(\/|$)/.test(route.path) || route.pathType === 'ImplementationSpecific') {
      fail(
        `Ingress/${route.ing.metadata.name}: path ${route.path} (${route.pathType}) routes more of the control plane than /api, /docs and /console`,
      );
    }
  }
  // The operator API: its port only behind ClusterIP Services, none of which an Ingress names;
  // no Ingress path under /api/v1/operator; the ingress controller not admitted to the port.
  const operatorBackends = new Set();
  for (const { workload, operatorPort, named } of operatorListeners) {
    for (const service of byKind('Service').filter((x) =>
      matches(x.spec.selector, workload.spec.template.metadata.labels),
    )) {
      for (const servicePort of service.spec.ports ?? []) {
        const target =
          typeof servicePort.targetPort === 'string'
            ? named.get(servicePort.targetPort)
            : (servicePort.targetPort ?? servicePort.port);
        if (target !== operatorPort) continue;
        operatorBackends.add(`${service.metadata.name}:${servicePort.name}`);
        operatorBackends.add(`${service.metadata.name}:${servicePort.port}`);
        if ((service.spec.type ?? 'ClusterIP') !== 'ClusterIP')
          fail(
            `Service/${service.metadata.name}: exposes OPERATOR_PORT ${operatorPort} as ${service.spec.type}; only ClusterIP may`,
          );
      }
    }
    if (operatorBackends.size === 0)
      fail(`no ClusterIP Service port reaches the control plane's OPERATOR_PORT ${operatorPort}`);
    if (cpPolicy)
      for (const rule of cpPolicy.spec.ingress ?? []) {
        const fromIngress = (rule.from ?? []).some(
          (peer) => peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'ingress-nginx',
        );
        const ports = (rule.ports ?? []).map((p) =>
          typeof p.port === 'string' ? named.get(p.port) : p.port,
        );
        if (fromIngress && (ports.length === 0 || ports.includes(operatorPort)))
          fail(
            `NetworkPolicy/${cpPolicy.metadata.name}: admits the ingress controller to OPERATOR_PORT ${operatorPort}`,
          );
      }
  }
  for (const route of routes) {
    const port = route.backend.service.port ?? {};
    if (
      operatorBackends.has(`${route.service}:${port.name}`) ||
      operatorBackends.has(`${route.service}:${port.number}`)
    )
      fail(`Ingress/${route.ing.metadata.name}: path ${route.path} routes the control plane's OPERATOR_PORT`);
    if (/^\/api\/v1\/operator(\/|$)/i.test(route.path))
      fail(`Ingress/${route.ing.metadata.name}: path ${route.path} routes the operator API`);
  }
  // Prometheus finds what it scrapes by these annotations: the control plane's and each consumer's.
  for (const workload of byKind('Deployment')) {
    const notes = workload.spec.template.metadata.annotations ?? {};
    const name = workload.metadata.name;
    const scraped = notes['prometheus.io/scrape'] === 'true';
    const wanted =
      name === 'control-plane' ||
      workload.spec.template.metadata.labels?.['app.kubernetes.io/component'] === 'delivery';
    if (wanted && !scraped) fail(`Deployment/${name}: no prometheus.io/scrape annotation`);
    if (!scraped) continue;
    const ports = workload.spec.template.spec.containers.flatMap((c) =>
      (c.ports ?? []).map((p) => String(p.containerPort)),
    );
    if (!ports.includes(notes['prometheus.io/port']))
      fail(
        `Deployment/${name}: prometheus.io/port ${notes['prometheus.io/port']} is none of its container ports`,
      );
    if (notes['prometheus.io/path'] !== '/metrics')
      fail(`Deployment/${name}: prometheus.io/path must be /metrics`);
  }
  return problems;
}

/** Known breaks, each of which must be reported: proof that the checks can fail. */
const breaks = [
  [
    'the warehouse credentials mounted in hosted ingestion',
    (o) => {
      dep(o, 'ingestion').containers[0].env.push({
        name: 'WAREHOUSE_URL',
        valueFrom: { secretKeyRef: { name: 'warehouse-database', key: 'WAREHOUSE_URL' } },
      });
    },
  ],
  [
    'the warehouse credentials mounted in a forwarding consumer',
    (o) => {
      dep(o, 'delivery-webhook').containers[0].env.push({
        name: 'WAREHOUSE_URL',
        valueFrom: { secretKeyRef: { name: 'warehouse-database', key: 'WAREHOUSE_URL', optional: true } },
      });
    },
  ],
  [
    'the warehouse credentials mounted in the log consumer',
    (o) => {
      dep(o, 'delivery-log').containers[0].env.push({
        name: 'WAREHOUSE_URL',
        valueFrom: { secretKeyRef: { name: 'warehouse-database', key: 'WAREHOUSE_URL' } },
      });
    },
  ],
  [
    "the operator API's Service routed by an Ingress",
    (o) => {
      const paths = o.find((x) => x.kind === 'Ingress' && x.metadata.name === 'control-plane').spec.rules[0]
        .http.paths;
      paths.push({
        path: '/api/v2',
        pathType: 'Prefix',
        backend: { service: { name: 'control-plane-operator', port: { name: 'operator' } } },
      });
    },
  ],
  [
    'the operator port added to the public Service and routed by its number',
    (o) => {
      o.find((x) => x.kind === 'Service' && x.metadata.name === 'control-plane').spec.ports.push({
        name: 'admin',
        port: 3100,
        targetPort: 3100,
      });
      const paths = o.find((x) => x.kind === 'Ingress' && x.metadata.name === 'control-plane').spec.rules[0]
        .http.paths;
      paths.push({
        path: '/api/v2',
        pathType: 'Prefix',
        backend: { service: { name: 'control-plane', port: { number: 3100 } } },
      });
    },
  ],
  [
    'the operator path routed at the edge',
    (o) => {
      const paths = o.find((x) => x.kind === 'Ingress' && x.metadata.name === 'control-plane').spec.rules[0]
        .http.paths;
      paths.push({ ...structuredClone(paths[0]), path: '/api/v1/operator/' });
    },
  ],
  [
    'the operator Service as a LoadBalancer',
    (o) => {
      o.find((x) => x.kind === 'Service' && x.metadata.name === 'control-plane-operator').spec.type =
        'LoadBalancer';
    },
  ],
  [
    'OPERATOR_PORT on the public port',
    (o) => {
      o.find((x) => x.kind === 'ConfigMap' && x.metadata.name === 'control-plane-config').data.OPERATOR_PORT =
        '3000';
    },
  ],
  [
    'the ingress controller admitted to the operator port',
    (o) => {
      const policy = o.find((x) => x.kind === 'NetworkPolicy' && x.metadata.name === 'control-plane');
      policy.spec.ingress[0].ports.push({ port: 3100, protocol: 'TCP' });
    },
  ],
  [
    'a snippet annotation on an Ingress',
    (o) => {
      const ing = o.find((x) => x.kind === 'Ingress' && x.metadata.name === 'ingestion');
      ing.metadata.annotations['nginx.ingress.kubernetes.io/configuration-snippet'] =
        'more_set_headers "X: y";';
    },
  ],
  [
    'a variable dropped from a ConfigMap',
    (o) =>
      delete o.find((x) => x.kind === 'ConfigMap' && x.metadata.name === 'delivery-config').data
        .VENDOR_TIMEOUT_MS,
  ],
  [
    'a misspelt variable',
    (o) => {
      const c = dep(o, 'ingestion').containers[0];
      c.env.push({ name: 'REDIS_URI', value: 'x' });
    },
  ],
  [
    'a consumer kind without a Deployment',
    (o) =>
      o.splice(
        o.findIndex((x) => x.kind === 'Deployment' && x.metadata.name === 'delivery-webhook'),
        1,
      ),
  ],
  [
    'a grace period shorter than the shutdown',
    (o) => {
      dep(o, 'control-plane').terminationGracePeriodSeconds = 20;
    },
  ],
  [
    'a probe on the wrong path',
    (o) => {
      dep(o, 'ingestion').containers[0].livenessProbe.httpGet.path = '/';
    },
  ],
  [
    'a readiness probe on /livez',
    (o) => {
      dep(o, 'delivery-log').containers[0].readinessProbe.httpGet.path = '/livez';
    },
  ],
  [
    "ingestion's /metrics on the public port",
    (o) => {
      o.find((x) => x.kind === 'ConfigMap' && x.metadata.name === 'ingestion-config').data.METRICS_PORT =
        '3001';
    },
  ],
  [
    "ingestion's metrics port in its Service",
    (o) => {
      o.find((x) => x.kind === 'Service' && x.metadata.name === 'ingestion').spec.ports.push({
        name: 'metrics',
        port: 9464,
        targetPort: 'metrics',
      });
    },
  ],
  [
    'the log consumer allowed to the control plane',
    (o) => {
      tpl(o, 'delivery-log').metadata.labels['pipeline.internal-api-client'] = 'true';
    },
  ],
  [
    "a consumer presenting another kind's token",
    (o) => {
      dep(o, 'delivery-webhook').containers[0].env.find(
        (e) => e.name === 'INTERNAL_SERVICE_TOKEN',
      ).valueFrom.secretKeyRef.key = 'INTERNAL_TOKEN_DELIVERY_AMPLITUDE';
    },
  ],
  [
    "ingestion presenting a consumer's token",
    (o) => {
      dep(o, 'ingestion').containers[0].env.find(
        (e) => e.name === 'INTERNAL_SERVICE_TOKEN',
      ).valueFrom.secretKeyRef.key = 'INTERNAL_TOKEN_DELIVERY_WEBHOOK';
    },
  ],
  ['a missing memory limit', (o) => delete dep(o, 'delivery-log').containers[0].resources.limits.memory],
  [
    'an unknown Secret key',
    (o) => {
      dep(o, 'ingestion').containers[0].env.find((e) => e.name === 'REDIS_URL').valueFrom.secretKeyRef.key =
        'url';
    },
  ],
  [
    'a 10 MB edge body limit',
    (o) => {
      o.find((x) => x.kind === 'Ingress' && x.metadata.name === 'ingestion').metadata.annotations[
        'nginx.ingress.kubernetes.io/proxy-body-size'
      ] = '10m';
    },
  ],
  [
    'the control plane routed at /',
    (o) => {
      o.find(
        (x) => x.kind === 'Ingress' && x.metadata.name === 'control-plane',
      ).spec.rules[0].http.paths[0].path = '/';
    },
  ],
  [
    "the control plane's /metrics routed at the edge",
    (o) => {
      const paths = o.find((x) => x.kind === 'Ingress' && x.metadata.name === 'control-plane').spec.rules[0]
        .http.paths;
      paths.push({ ...structuredClone(paths[0]), path: '/metrics' });
    },
  ],
  [
    'the control plane not scraped',
    (o) => {
      delete tpl(o, 'control-plane').metadata.annotations['prometheus.io/scrape'];
    },
  ],
  [
    'a string where an integer belongs',
    (o) => {
      dep(o, 'ingestion').containers[0].ports[0].containerPort = '3001';
    },
  ],
];
function tpl(objects, name) {
  return objects.find((x) => x.kind === 'Deployment' && x.metadata.name === name).spec.template;
}
function dep(objects, name) {
  return tpl(objects, name).spec;
}

const environments = ['staging', 'production'];
let failed = false;
const secrets = render('deploy/secrets');
const secretProblems = await schemaProblems(secrets);
for (const p of secretProblems) console.error(`deploy/secrets: ${p}`);
failed ||= secretProblems.length > 0;
for (const environment of environments) {
  const objects = [
    ...render(`deploy/overlays/${environment}`),
    ...render(`deploy/overlays/${environment}/migrate`),
  ];
  const problems = [...(await schemaProblems(objects)), ...contractProblems(objects, secrets)];
  const count = (kind) => objects.filter((o) => o.kind === kind).length;
  if (problems.length > 0) {
    failed = true;
    for (const p of problems) console.error(`${environment}: ${p}`);
  }
  console.log(
    `${environment}: ${objects.length} objects (${count('Deployment')} Deployments, ${count('Job')} Job, ${count('ConfigMap')} ConfigMaps, ` +
      `${count('NetworkPolicy')} NetworkPolicies, ${count('Ingress')} Ingresses) + ${secrets.length} Secrets template: ` +
      `${problems.length === 0 ? 'valid' : `${problems.length} problems`}`,
  );
  for (const [name, mutate] of breaks) {
    const copy = structuredClone(objects);
    mutate(copy);
    const found = [...(await schemaProblems(copy)), ...contractProblems(copy, secrets)];
    if (found.length === 0) {
      failed = true;
      console.error(`${environment}: the checks did not notice ${name}`);
    }
  }
}
console.log(
  failed ? 'manifests: FAILED' : `manifests: valid; each of ${breaks.length} known breaks is reported`,
);
process.exit(failed ? 1 : 0);
