# Latchkey: a small runtime image that runs as a non-root user, with the database on a volume and
# the secret key that encrypts the database's secrets mounted apart from it (never on the volume,
# so a copy of the volume is not a copy of the key). compose.yaml shows it all together.
# Build: docker build -t latchkey .
# Key:   docker run --rm latchkey node dist/cli/main.js secret-key generate > latchkey_secret_key
# Run:   docker run -p 3000:3000 -v latchkey-data:/data \
#          -v "$PWD/latchkey_secret_key:/run/secrets/latchkey_secret_key:ro" \
#          -e LATCHKEY_ISSUER=https://id.example.com latchkey

# --- build: compile TypeScript and the better-sqlite3 addon, then drop dev dependencies ---
FROM node:22-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY views ./views
COPY migrations ./migrations
# npm ci runs the prepare script, which builds dist/.
RUN npm ci && npm prune --omit=dev

# --- runtime: only what running needs ---
FROM node:22-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    LATCHKEY_DB=/data/latchkey.db \
    LATCHKEY_SECRET_KEY_FILE=/run/secrets/latchkey_secret_key
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
