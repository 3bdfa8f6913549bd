-- Latchkey schema for PostgreSQL, version 1: the equivalent of migrations/0001…0003 for SQLite,
-- except directory_version (the PostgreSQL store keeps no cache that would need it).
-- Times are BIGINT epoch seconds unless the column says _ms, as in SQLite. Bearer secrets (device
-- codes, user codes, authorization codes, refresh tokens, client secrets, session ids) are stored
-- only as SHA-256 digests (base64url). JSON stays TEXT, so what was written is read back exactly.
-- PostgreSQL does not index a foreign key by itself: the extra *_client_id and sessions_user_id
-- indexes keep the cascades of removing a client and the session purges of a user from scanning.

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  username      TEXT NOT NULL,
  email         TEXT NOT NULL,
  name          TEXT,
  password_hash TEXT NOT NULL,
  disabled      BOOLEAN NOT NULL DEFAULT false,
  created_at    BIGINT NOT NULL
);
-- SQLite's COLLATE NOCASE: unique regardless of the case of ASCII letters. Under the "C" collation
-- lower() folds only A-Z, so no other character (a Kelvin sign, a dotted İ) is taken for a letter.
CREATE UNIQUE INDEX users_username_nocase ON users (lower(username COLLATE "C"));

CREATE TABLE clients (
  client_id     TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  secret_hash   TEXT,
  redirect_uris TEXT NOT NULL,          -- JSON array of strings
  grant_types   TEXT NOT NULL,          -- JSON array of grant type names
  require_pkce  BOOLEAN NOT NULL,
  first_party   BOOLEAN NOT NULL,
  built_in      BOOLEAN NOT NULL DEFAULT false,
  created_at    BIGINT NOT NULL
);

CREATE TABLE apis (
  identifier TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE signing_keys (
  kid             TEXT PRIMARY KEY,
  alg             TEXT NOT NULL,
  private_key_pem TEXT NOT NULL,
  public_jwk      TEXT NOT NULL,        -- JSON
  created_at      BIGINT NOT NULL,
  retired_at      BIGINT
);

CREATE TABLE server_secrets (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE sessions (
  id_hash    TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  auth_time  BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_expires_at ON sessions(expires_at);
CREATE INDEX sessions_user_id ON sessions(user_id);

CREATE TABLE device_grants (
  id                   TEXT PRIMARY KEY,
  device_code_hash     TEXT NOT NULL UNIQUE,
  user_code_hash       TEXT NOT NULL UNIQUE,
  client_id            TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  scope                TEXT NOT NULL,
  audience             TEXT NOT NULL,
  status               TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  poll_interval        BIGINT NOT NULL,
  last_polled_at_ms    BIGINT,
  user_id              TEXT REFERENCES users(id) ON DELETE CASCADE,
  auth_time            BIGINT,
  requester_ip         TEXT NOT NULL,
  requester_user_agent TEXT NOT NULL,
  created_at           BIGINT NOT NULL,
  expires_at           BIGINT NOT NULL,
  decided_at           BIGINT,
  consumed_at          BIGINT
);
CREATE INDEX device_grants_expires_at ON device_grants(expires_at);
CREATE INDEX device_grants_client_id ON device_grants(client_id);

-- Refresh tokens rotate on every use; all tokens descending from one sign-in form a family.
CREATE TABLE refresh_tokens (
  id                TEXT PRIMARY KEY,
  token_hash        TEXT NOT NULL UNIQUE,
  family_id         TEXT NOT NULL,
  client_id         TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  scope             TEXT NOT NULL,
  audience          TEXT NOT NULL,
  auth_time         BIGINT NOT NULL,
  created_at        BIGINT NOT NULL,
  expires_at        BIGINT NOT NULL,    -- min(family end, created_at + idle timeout)
  family_expires_at BIGINT NOT NULL,    -- absolute end of the family: rotation never extends it
  rotated_at        BIGINT,             -- replaced by a successor at this time
  replaced_by       TEXT,               -- id of that first successor
  grace_successors  BIGINT NOT NULL DEFAULT 0, -- extra successors handed out within the reuse grace window
  revoked_at        BIGINT
);
CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens(expires_at);
CREATE INDEX refresh_tokens_client_id ON refresh_tokens(client_id);

-- A revoked family stays revoked: a token inserted into it later (a redemption racing its own
-- replay, a grace-window refresh racing a theft) is born revoked.
CREATE TABLE revoked_refresh_families (
  family_id  TEXT PRIMARY KEY,
  revoked_at BIGINT NOT NULL
);

-- The Authorization Code flow: pending authorization requests (interactions), remembered consents,
-- authorization codes (stored as digests), and revoked access tokens.

CREATE TABLE interactions (
  id                TEXT PRIMARY KEY,
  browser_hash      TEXT NOT NULL,      -- SHA-256 of the browser's CSRF cookie: the request is bound to the browser that made it
  client_id         TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  request           TEXT NOT NULL,      -- JSON of the validated authorization request
  signed_in_session TEXT,               -- digest of the session created by a sign-in done for this request
  max_age           BIGINT,             -- OIDC max_age: the sign-in must be at most this old when the code is issued
  created_at        BIGINT NOT NULL,
  expires_at        BIGINT NOT NULL
);
CREATE INDEX interactions_expires_at ON interactions(expires_at);
CREATE INDEX interactions_client_id ON interactions(client_id);

CREATE TABLE consents (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  client_id  TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  audience   TEXT NOT NULL,
  scope      TEXT NOT NULL,             -- space-separated scopes granted so far
  granted_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, client_id, audience)
);

CREATE TABLE authorization_codes (
  code_hash         TEXT PRIMARY KEY,
  client_id         TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  redirect_uri      TEXT NOT NULL,
  scope             TEXT NOT NULL,
  audience          TEXT NOT NULL,
  nonce             TEXT,
  code_challenge    TEXT,
  auth_time         BIGINT NOT NULL,
  created_at        BIGINT NOT NULL,
  expires_at        BIGINT NOT NULL,
  consumed_at       BIGINT,
  access_token_jti  TEXT,               -- what the redemption issued, revoked if the code is replayed
  refresh_family_id TEXT
);
CREATE INDEX authorization_codes_expires_at ON authorization_codes(expires_at);
CREATE INDEX authorization_codes_client_id ON authorization_codes(client_id);

CREATE TABLE revoked_access_tokens (
  jti        TEXT PRIMARY KEY,
  expires_at BIGINT NOT NULL            -- kept until the token would have expired anyway
);
CREATE INDEX revoked_access_tokens_expires_at ON revoked_access_tokens(expires_at);
