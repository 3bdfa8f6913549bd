-- Hardening round two (issue 14); see migrations/0005_hardening.sql for the reasons.
DROP TABLE interactions;
ALTER TABLE sessions ADD COLUMN interaction_id TEXT;

ALTER TABLE users ADD COLUMN tokens_revoked_at BIGINT;

CREATE TABLE removed_clients (
  client_id  TEXT PRIMARY KEY,
  removed_at BIGINT NOT NULL
);
ALTER TABLE clients ADD COLUMN tokens_revoked_at BIGINT;

ALTER TABLE refresh_tokens ADD COLUMN parent_id TEXT;
ALTER TABLE refresh_tokens ADD COLUMN superseded_at BIGINT;
CREATE INDEX refresh_tokens_parent ON refresh_tokens(parent_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);

ALTER TABLE apis ADD COLUMN introspection_clients TEXT NOT NULL DEFAULT '[]';
