-- Upstream identity providers ("connectors", issue 15): OpenID Connect, GitHub and LDAP.

CREATE TABLE connectors (
  id         TEXT PRIMARY KEY,
  type       TEXT NOT NULL CHECK (type IN ('oidc', 'github', 'ldap')),
  name       TEXT NOT NULL,
  config     TEXT NOT NULL,               -- JSON of the settings that are not secret
  secret     TEXT,                        -- client secret or bind password, sealed (crypto/secret_box.ts)
  position   INTEGER NOT NULL,            -- the order LDAP directories are tried in, and buttons shown in
  created_at INTEGER NOT NULL
) STRICT;

-- Who a person is upstream: (connector, the upstream's stable subject) → a local user, whose `sub`
-- never changes. Removing a connector forgets its identities (a new connector of the same id may
-- point elsewhere); the users stay, for an operator to disable or keep.
CREATE TABLE user_identities (
  connector_id      TEXT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  subject           TEXT NOT NULL,
  user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at        INTEGER NOT NULL,
  last_sign_in_at   INTEGER,
  PRIMARY KEY (connector_id, subject)
) STRICT;
CREATE INDEX user_identities_user ON user_identities(user_id);

-- Where a user came from ('local', or the connector that created it), whether their email is
-- verified (upstreams say; administrators' entries count as verified), and their upstream groups.
ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT 'local';
ALTER TABLE users ADD COLUMN email_verified INTEGER NOT NULL DEFAULT 1 CHECK (email_verified IN (0, 1));
ALTER TABLE users ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';
CREATE INDEX users_email ON users(email COLLATE NOCASE);
-- The first administrator's made-up address (admin@localhost) was never anyone's mailbox: it must
-- not read as verified, nor let an upstream account of that email be linked to it.
UPDATE users SET email_verified = 0 WHERE lower(email) LIKE '%@localhost';

CREATE TRIGGER connectors_inserted AFTER INSERT ON connectors BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER connectors_updated AFTER UPDATE ON connectors BEGIN UPDATE directory_version SET version = version + 1; END;
CREATE TRIGGER connectors_deleted AFTER DELETE ON connectors BEGIN UPDATE directory_version SET version = version + 1; END;
