# syntax=docker/dockerfile:1
# Model Gateway: build with the dev dependencies, run with production ones only, as a non-root user.
#   docker build -t model-gateway .
#   docker run -p 8080:8080 -e UPSTREAM_URL=... -e UPSTREAM_API_KEY=... -e REDIS_URL=... model-gateway
# Your config: mount it (e.g. at /config/production.json) and set GATEWAY_CONFIG; /app/config.json keeps the
# shipped catalogue, the default of a file without `models`. Reload without a restart: edit the mounted
# file, then `docker kill -s HUP <container>`.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.app.json ./
COPY lib ./lib
COPY middleware ./middleware
COPY routes ./routes
COPY translators ./translators
COPY examples ./examples
RUN npm run build:app && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    PORT=8080
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json config.json openapi.yaml ./
COPY --chown=node:node dashboard ./dashboard
USER node
EXPOSE 8080
CMD ["node", "dist/lib/server.js"]
