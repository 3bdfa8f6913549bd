-- Upstream identity providers (issue 15); see migrations/0006_connectors.sql for the reasons.
CREATE TABLE connectors (
  id         TEXT PRIMARY KEY,
  type       TEXT NOT NULL CHECK (type IN ('oidc', 'github', 'ldap')),
  name       TEXT NOT NULL,
  config     TEXT NOT NULL,
  secret     TEXT,
  position   BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE user_identities (
  connector_id    TEXT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  subject         TEXT NOT NULL,
  user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at      BIGINT NOT NULL,
  last_sign_in_at BIGINT,
  PRIMARY KEY (connector_id, subject)
);
CREATE INDEX user_identities_user ON user_identities(user_id);

ALTER TABLE users ADD COLUMN source TEXT NOT NULL DEFAULT 'local';
ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE users ADD COLUMN groups TEXT NOT NULL DEFAULT '[]';
CREATE INDEX users_email ON users (lower(email));
UPDATE users SET email_verified = false WHERE lower(email) LIKE '%@localhost';
