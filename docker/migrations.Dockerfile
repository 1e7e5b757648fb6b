# syntax=docker/dockerfile:1
# Migrations image: a one-shot job run to completion before each control plane rollout. Build context: the repository root
#   docker build -f docker/migrations.Dockerfile -t pipeline/migrations .
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
RUN pnpm --filter @pipeline/control-plane deploy --legacy --prod /out

FROM ${NODE_IMAGE} AS runtime
RUN groupadd --system --gid 10001 pipeline \
 && useradd --system --uid 10001 --gid pipeline --no-create-home --shell /usr/sbin/nologin pipeline
ENV NODE_ENV=production
WORKDIR /app
# Owned by root, read-only to the service user (the manifests mount no writable root either).
COPY --from=build /out /app
USER 10001:10001
# A one-shot job that exits when the migrations are applied: nothing to probe.
HEALTHCHECK NONE
STOPSIGNAL SIGTERM
CMD ["node", "dist/database/migrate.js"]
