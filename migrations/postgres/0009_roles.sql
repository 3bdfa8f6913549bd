-- Roles, API permissions, machine clients, one-time keys and the stored audit log (issue 18); see
-- migrations/0009_roles.sql for the reasons. No directory_version triggers: this store keeps no cache.
ALTER TABLE apis ADD COLUMN scopes TEXT NOT NULL DEFAULT '[]';

ALTER TABLE clients ADD COLUMN jwks_uri TEXT;
ALTER TABLE clients ADD COLUMN jwks TEXT;
ALTER TABLE clients ADD COLUMN secret_sealed TEXT;
ALTER TABLE clients ADD COLUMN previous_secret_hash TEXT;
ALTER TABLE clients ADD COLUMN previous_secret_sealed TEXT;
ALTER TABLE clients ADD COLUMN previous_secret_expires_at BIGINT;
ALTER TABLE clients ADD COLUMN disabled BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE roles (
  name        TEXT PRIMARY KEY,
  description TEXT,
  built_in    BOOLEAN NOT NULL DEFAULT false,
  created_at  BIGINT NOT NULL
);
INSERT INTO roles (name, description, built_in, created_at)
  VALUES ('admin', 'May use the admin console', true, floor(extract(epoch FROM now()))::bigint);

-- PostgreSQL does not index a foreign key by itself: the *_api and user_roles_role indexes keep
-- the cascades of removing an API or a role from scanning (the primary keys cover the others).
CREATE TABLE role_permissions (
  role  TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  api   TEXT NOT NULL REFERENCES apis(identifier) ON DELETE CASCADE,
  scope TEXT NOT NULL,
  PRIMARY KEY (role, api, scope)
);
CREATE INDEX role_permissions_api ON role_permissions(api);

CREATE TABLE user_roles (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role       TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,
  granted_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, role)
);
CREATE INDEX user_roles_role ON user_roles(role);

CREATE TABLE client_grants (
  client_id  TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  api        TEXT NOT NULL REFERENCES apis(identifier) ON DELETE CASCADE,
  scopes     TEXT NOT NULL,             -- JSON array, in the order given
  created_at BIGINT NOT NULL,
  PRIMARY KEY (client_id, api)
);
CREATE INDEX client_grants_api ON client_grants(api);

CREATE TABLE used_once (
  purpose    TEXT NOT NULL,
  key        TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  PRIMARY KEY (purpose, key)
);
CREATE INDEX used_once_expires_at ON used_once(expires_at);

-- A sequence never hands out an id twice, so ids stay a paging cursor after purges.
CREATE TABLE audit_events (
  id        BIGSERIAL PRIMARY KEY,
  at        BIGINT NOT NULL,            -- epoch milliseconds
  event     TEXT NOT NULL,
  actor     TEXT,
  user_id   TEXT,
  client_id TEXT,
  ip        TEXT,
  details   TEXT NOT NULL DEFAULT '{}'  -- JSON object
);
CREATE INDEX audit_events_at ON audit_events(at);
CREATE INDEX audit_events_user ON audit_events(user_id, id);
CREATE INDEX audit_events_client ON audit_events(client_id, id);
-- COLLATE "C": an event prefix is looked up as a byte range (see listAuditEvents).
CREATE INDEX audit_events_event ON audit_events(event COLLATE "C", id);
