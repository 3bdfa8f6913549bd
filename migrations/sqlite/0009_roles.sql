-- Roles, API permissions, machine clients, one-time keys and the stored audit log (issue 18).

-- The permissions (scope names) an API declares, in the order given: JSON array. An API made
-- before this version declares none until an operator gives it some.
ALTER TABLE apis ADD COLUMN scopes TEXT NOT NULL DEFAULT '[]';

-- Clients that authenticate with a key (private_key_jwt, RFC 7523): an https address of their JWK
-- Set, or the set itself (JSON, public keys only). The secret sealed (crypto/secret_box.ts) is the
-- HMAC key of client_secret_jwt; NULL for secrets made before it was kept. A rotated secret stays
-- accepted until previous_secret_expires_at. A disabled client can do nothing until enabled again.
-- grant_types is a JSON array without a CHECK, so client_credentials needs no change to it.
ALTER TABLE clients ADD COLUMN jwks_uri TEXT;
ALTER TABLE clients ADD COLUMN jwks TEXT;
ALTER TABLE clients ADD COLUMN secret_sealed TEXT;
ALTER TABLE clients ADD COLUMN previous_secret_hash TEXT;
ALTER TABLE clients ADD COLUMN previous_secret_sealed TEXT;
ALTER TABLE clients ADD COLUMN previous_secret_expires_at INTEGER;
ALTER TABLE clients ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));

-- Roles: named bundles of API permissions given to people. Names are case-sensitive identifiers
-- (BINARY, like client ids). `admin` is built in: it may use the admin console and cannot be removed.
CREATE TABLE roles (
  name        TEXT PRIMARY KEY,
  description TEXT,
  built_in    INTEGER NOT NULL DEFAULT 0 CHECK (built_in IN (0, 1)),
  created_at  INTEGER NOT NULL
) STRICT;
INSERT INTO roles (name, description, built_in, created_at)
  VALUES ('admin', 'May use the admin console', 1, CAST(strftime('%s', 'now') AS INTEGER));

-- A permission goes with its role and with its API (removing an API takes its scopes out of
-- every role). Whether the API still declares the scope is checked when tokens are issued.
CREATE TABLE role_permissions (
  role  TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  api   TEXT NOT NULL REFERENCES apis(identifier) ON DELETE CASCADE,
  scope TEXT NOT NULL,
  PRIMARY KEY (role, api, scope)
) STRICT;
CREATE INDEX role_permissions_api ON role_permissions(api);

CREATE TABLE user_roles (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role       TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  granted_at INTEGER NOT NULL,
  PRIMARY KEY (user_id, role)
) STRICT;
-- A role's members, and the cascade when a role is removed.
CREATE INDEX user_roles_role ON user_roles(role);
-- A user's roles are part of the user record the server caches: a grant or a revocation (also by
-- a cascade) from any process drops the cache like any other change to users.
CREATE TRIGGER user_roles_inserted AFTER INSERT ON user_roles BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER user_roles_deleted AFTER DELETE ON user_roles BEGIN UPDATE directory_version SET version = version + 1; END;

-- What a machine client may ask client_credentials tokens for: per API, some of its scopes (JSON
-- array, in the order given). It goes with the client (a client_id registered again must not
-- inherit it, nor can a grant be saved for a client removed meanwhile) and with the API.
CREATE TABLE client_grants (
  client_id  TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  api        TEXT NOT NULL REFERENCES apis(identifier) ON DELETE CASCADE,
  scopes     TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (client_id, api)
) STRICT;
CREATE INDEX client_grants_api ON client_grants(api);

-- Keys good once until they expire (a client assertion's jti, DPoP proofs): the primary key makes
-- "insert if absent" one atomic step for every process on the database.
CREATE TABLE used_once (
  purpose    TEXT NOT NULL,
  key        TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (purpose, key)
) STRICT;
CREATE INDEX used_once_expires_at ON used_once(expires_at);

-- The audit log, kept in the database so the admin console can search it. AUTOINCREMENT: an id is
-- never handed out twice, even after the newest events were purged, so ids stay a paging cursor.
-- No foreign keys: the record of what happened outlives the users and clients it names. Never a
-- secret in any column.
CREATE TABLE audit_events (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  at        INTEGER NOT NULL,           -- epoch milliseconds
  event     TEXT NOT NULL,
  actor     TEXT,
  user_id   TEXT,
  client_id TEXT,
  ip        TEXT,
  details   TEXT NOT NULL DEFAULT '{}'  -- JSON object
) STRICT;
-- Newest first within each filter, and the purge by age.
CREATE INDEX audit_events_at ON audit_events(at);
CREATE INDEX audit_events_user ON audit_events(user_id, id);
CREATE INDEX audit_events_client ON audit_events(client_id, id);
CREATE INDEX audit_events_event ON audit_events(event, id);
