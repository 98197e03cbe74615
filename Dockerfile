# sluice: one image for the HTTP service and the workers; the command picks the role
# (`serve`, the default, or `worker`). Build: docker build -t sluice .
FROM node:20-slim AS build
WORKDIR /app
# Dependencies first, so source changes do not invalidate the npm layer.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY workers ./workers
COPY lua ./lua
# The dashboard's browser code and its bundler script: `npm run build` bundles them into dist/ui.
COPY ui ./ui
COPY scripts ./scripts
# express is an optional peer dependency of the library (a devDependency here), but `sluice serve`
# needs it: the image makes it a production dependency before pruning the dev ones (same locked version).
RUN npm run build \
 && npm pkg set dependencies.express="$(node -p "require('./package.json').devDependencies.express")" \
 && npm pkg delete devDependencies.express \
 && npm prune --omit=dev --no-audit --no-fund

FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
# The built program, its production dependencies, the Lua scripts it loads at start (found by walking
# up from dist/), and package.json (the version `sluice --version` prints).
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/lua ./lua
# The example rules, so the image runs as is; mount your own folder and set SLUICE_CONFIG.
COPY examples ./examples
# In a container the server must listen on every interface; 127.0.0.1 would be unreachable.
ENV HOST=0.0.0.0 \
    PORT=8080 \
    SLUICE_CONFIG=/app/examples/rules.yaml
EXPOSE 8080
# The official image's unprivileged user (uid 1000); files stay owned by root, so they are read-only to it.
USER node
# Exec form: node is PID 1 and receives SIGTERM itself, for the graceful shutdown.
CMD ["node", "dist/src/cli/main.js", "serve"]
