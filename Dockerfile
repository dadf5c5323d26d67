# syntax=docker/dockerfile:1
# The platform image: every controller, the sample updaters and the CLI in one image; the Deployments choose the
# component with `run <component>` / `updater <name>` (see cdk8s/charts.ts). Build: docker build -t REF .

# --- build: install exactly the lockfile, compile TypeScript, then drop dev dependencies ---
FROM node:20.19-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The npm workspaces (the SDK and conformance kit packages): npm ci needs their package.json files.
COPY packages ./packages
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY tools ./tools
COPY cdk8s ./cdk8s
COPY crds ./crds
RUN npm run build \
 && cp -r tools/capi-sim/crds dist/tools/capi-sim/crds \
 && cp -r tools/capi-sim/crds-runtime dist/tools/capi-sim/crds-runtime \
 && npm prune --omit=dev

# --- runtime: no compilers, no dev dependencies, non-root ---
FROM node:20.19-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The dashboard's page (HTML, JS, CSS: tsc copies none of them).
COPY --from=build /app/src/dashboard/static ./dist/src/dashboard/static
COPY --from=build /app/crds ./crds
COPY bin ./bin
# 65532 = the "nonroot" uid the Deployments run as (runAsNonRoot, readOnlyRootFilesystem; /tmp is an emptyDir).
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["--help"]
