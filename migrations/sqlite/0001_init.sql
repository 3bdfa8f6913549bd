-- Latchkey schema, version 1. Times are INTEGER epoch seconds unless the column says _ms.
-- Bearer secrets (device codes, user codes, authorization codes, refresh tokens, client secrets,
-- session ids) are stored only as SHA-256 digests (base64url).

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  username      TEXT NOT NULL UNIQUE COLLATE NOCASE,
  email         TEXT NOT NULL,
  name          TEXT,
  password_hash TEXT NOT NULL,
  disabled      INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
  created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE clients (
  client_id     TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  secret_hash   TEXT,
  redirect_uris TEXT NOT NULL,          -- JSON array of strings
  grant_types   TEXT NOT NULL,          -- JSON array of grant type names
  require_pkce  INTEGER NOT NULL CHECK (require_pkce IN (0, 1)),
  first_party   INTEGER NOT NULL CHECK (first_party IN (0, 1)),
  built_in      INTEGER NOT NULL DEFAULT 0 CHECK (built_in IN (0, 1)),
  created_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE apis (
  identifier TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE signing_keys (
  kid             TEXT PRIMARY KEY,
  alg             TEXT NOT NULL,
  private_key_pem TEXT NOT NULL,
  public_jwk      TEXT NOT NULL,        -- JSON
  created_at      INTEGER NOT NULL,
  retired_at      INTEGER
) STRICT;

CREATE TABLE server_secrets (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE sessions (
  id_hash    TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  auth_time  INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_expires_at ON sessions(expires_at);

CREATE TABLE device_grants (
  id                   TEXT PRIMARY KEY,
  device_code_hash     TEXT NOT NULL UNIQUE,
  user_code_hash       TEXT NOT NULL UNIQUE,
  client_id            TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  scope                TEXT NOT NULL,
  audience             TEXT NOT NULL,
  status               TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  poll_interval        INTEGER NOT NULL,
  last_polled_at_ms    INTEGER,
  user_id              TEXT REFERENCES users(id) ON DELETE CASCADE,
  auth_time            INTEGER,
  requester_ip         TEXT NOT NULL,
  requester_user_agent TEXT NOT NULL,
  created_at           INTEGER NOT NULL,
  expires_at           INTEGER NOT NULL,
  decided_at           INTEGER,
  consumed_at          INTEGER
) STRICT;
CREATE INDEX device_grants_expires_at ON device_grants(expires_at);

-- Refresh tokens rotate on every use; all tokens descending from one sign-in form a family.
CREATE TABLE refresh_tokens (
  id                TEXT PRIMARY KEY,
  token_hash        TEXT NOT NULL UNIQUE,
  family_id         TEXT NOT NULL,
  client_id         TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  scope             TEXT NOT NULL,
  audience          TEXT NOT NULL,
  auth_time         INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL,   -- min(family end, created_at + idle timeout)
  family_expires_at INTEGER NOT NULL,   -- absolute end of the family: rotation never extends it
  rotated_at        INTEGER,            -- replaced by a successor at this time
  replaced_by       TEXT,               -- id of that first successor
  grace_successors  INTEGER NOT NULL DEFAULT 0, -- extra successors handed out within the reuse grace window
  revoked_at        INTEGER
) STRICT;
CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);

-- A revoked family stays revoked: a token inserted into it later (a redemption racing its own
-- replay, a grace-window refresh racing a theft) is born revoked.
CREATE TABLE revoked_refresh_families (
  family_id  TEXT PRIMARY KEY,
  revoked_at INTEGER NOT NULL
) STRICT;
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens(expires_at);
