# syntax=docker/dockerfile:1
# Ingestion image: /collect, the probes and the SDK file (PORT 3001), /metrics (METRICS_PORT 9464). Build context: the repository root
#   docker build -f docker/ingestion.Dockerfile -t pipeline/ingestion .
# The build stage installs the workspace, builds it, and prunes one deployable to its
# production dependencies with `pnpm deploy` (tools/deploy/check-pruned-install.sh runs that
# same install and starts it); the runtime stage holds only that directory.
ARG NODE_IMAGE=node:24.21-bookworm-slim

FROM ${NODE_IMAGE} AS build
ARG PNPM_VERSION=10.34.8
ENV NX_NO_CLOUD=true NX_DAEMON=false NX_TUI=false CI=true
RUN npm install --global --no-audit --no-fund "pnpm@${PNPM_VERSION}"
WORKDIR /repo
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
# pnpm fetch reads the patches/ that the lockfile's patchedDependencies name.
COPY patches ./patches
RUN pnpm fetch
COPY . .
RUN pnpm install --frozen-lockfile --offline \
 && pnpm exec nx run-many -t build --output-style=static
RUN pnpm --filter @pipeline/ingestion deploy --legacy --prod /out \
 && mkdir -p /out/sdk \
 && if [ -d libs/sdk/dist ]; then cp -R libs/sdk/dist/. /out/sdk/; fi

FROM ${NODE_IMAGE} AS runtime
RUN groupadd --system --gid 10001 pipeline \
 && useradd --system --uid 10001 --gid pipeline --no-create-home --shell /usr/sbin/nologin pipeline
ENV NODE_ENV=production SDK_JS_PATH=/app/sdk/sdk.js
WORKDIR /app
# Owned by root, read-only to the service user (the manifests mount no writable root either).
COPY --from=build /out /app
USER 10001:10001
EXPOSE 3001
# GET /metrics (METRICS_PORT), apart from the public port.
EXPOSE 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "require('http').get('http://127.0.0.1:' + (process.env.PORT || 3001) + '/health', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
STOPSIGNAL SIGTERM
# V8 sizes the young generation by the machine's memory, so on a large node garbage piles up
# between scavenges: peak RSS 327-361 MB under pnpm bench:collect. A 16 MB semi-space holds it
# at 231-270 MB, for about 20 µs more collector pause per 20-event request (24 and 32 MB went
# over 300 MB in some runs); docs/performance.md, "Memory". tools/dev.sh and the benchmarks
# start the service with the flags written here (tools/deploy/node-flags.mjs).
CMD ["node", "--max-semi-space-size=16", "dist/main.js"]
