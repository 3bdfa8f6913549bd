# Latchkey: a small runtime image that runs as a non-root user, with the database on a volume.
# Build: docker build -t latchkey .    Run: docker run -p 3000:3000 -v latchkey-data:/data \
#   -e LATCHKEY_ISSUER=https://id.example.com latchkey

# --- build: compile TypeScript and the better-sqlite3 addon, then drop dev dependencies ---
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY views ./views
COPY migrations ./migrations
# npm ci runs the prepare script, which builds dist/.
RUN npm ci && npm prune --omit=dev

# --- runtime: only what running needs ---
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    LATCHKEY_DB=/data/latchkey.db
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/views ./views
COPY --from=build /app/migrations ./migrations
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/cli/main.js", "serve"]
