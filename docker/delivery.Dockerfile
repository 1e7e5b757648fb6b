# syntax=docker/dockerfile:1
# Delivery consumer image: one destination kind per container (--destination <kind>), with
# /metrics and /health on DELIVERY_HTTP_PORT (9400); the dead-letter CLI too. Build context: the repository root
#   docker build -f docker/delivery.Dockerfile -t pipeline/delivery .
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
RUN pnpm --filter @pipeline/delivery deploy --legacy --prod /out

FROM ${NODE_IMAGE} AS runtime
RUN groupadd --system --gid 10001 pipeline \
 && useradd --system --uid 10001 --gid pipeline --no-create-home --shell /usr/sbin/nologin pipeline
ENV NODE_ENV=production
WORKDIR /app
# Owned by root, read-only to the service user (the manifests mount no writable root either).
COPY --from=build /out /app
USER 10001:10001
EXPOSE 9400
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "require('http').get('http://127.0.0.1:' + (process.env.DELIVERY_HTTP_PORT || 9400) + '/health', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
STOPSIGNAL SIGTERM
# The kind comes as arguments (the Kubernetes Deployments set `args`); the dead-letter CLI:
#   docker run --rm --entrypoint node pipeline/delivery dist/dead-letters/main.js list --destination amplitude
# --max-semi-space-size=16: V8 sizes the young generation by the machine's memory; capped, the
# warehouse consumer's peak RSS stays under 300 MB (docs/performance.md, "Memory").
ENTRYPOINT ["node", "--max-semi-space-size=16", "dist/main.js"]
CMD ["--destination", "log"]
