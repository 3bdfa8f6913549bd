-- The Authorization Code flow: pending authorization requests (interactions), remembered consents,
-- authorization codes (stored as digests), and revoked access tokens.

CREATE TABLE interactions (
  id              TEXT PRIMARY KEY,
  browser_hash    TEXT NOT NULL,        -- SHA-256 of the browser's CSRF cookie: the request is bound to the browser that made it
  client_id       TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  request         TEXT NOT NULL,        -- JSON of the validated authorization request
  signed_in_session TEXT,               -- digest of the session created by a sign-in done for this request
  max_age         INTEGER,              -- OIDC max_age: the sign-in must be at most this old when the code is issued
  created_at      INTEGER NOT NULL,
  expires_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX interactions_expires_at ON interactions(expires_at);

CREATE TABLE consents (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  client_id  TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  audience   TEXT NOT NULL,
  scope      TEXT NOT NULL,             -- space-separated scopes granted so far
  granted_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, client_id, audience)
) STRICT;

CREATE TABLE authorization_codes (
  code_hash         TEXT PRIMARY KEY,
  client_id         TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  redirect_uri      TEXT NOT NULL,
  scope             TEXT NOT NULL,
  audience          TEXT NOT NULL,
  nonce             TEXT,
  code_challenge    TEXT,
  auth_time         INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL,
  consumed_at       INTEGER,
  access_token_jti  TEXT,               -- what the redemption issued, revoked if the code is replayed
  refresh_family_id TEXT
) STRICT;
CREATE INDEX authorization_codes_expires_at ON authorization_codes(expires_at);

CREATE TABLE revoked_access_tokens (
  jti        TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL           -- kept until the token would have expired anyway
) STRICT;
CREATE INDEX revoked_access_tokens_expires_at ON revoked_access_tokens(expires_at);
