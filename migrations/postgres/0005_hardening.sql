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
UPDATE refresh_tokens c SET parent_id = p.id FROM refresh_tokens p WHERE p.replaced_by = c.id AND c.parent_id IS NULL;
INSERT INTO revoked_refresh_families (family_id, revoked_at)
  SELECT DISTINCT family_id, floor(extract(epoch FROM now()))::bigint FROM refresh_tokens WHERE grace_successors > 0 AND revoked_at IS NULL
  ON CONFLICT DO NOTHING;
UPDATE refresh_tokens SET revoked_at = floor(extract(epoch FROM now()))::bigint
WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM refresh_tokens WHERE grace_successors > 0);

ALTER TABLE apis ADD COLUMN introspection_clients TEXT NOT NULL DEFAULT '[]';
