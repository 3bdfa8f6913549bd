-- Upstream identities removed from the account they were linked to; see
-- migrations/0016_removed_identities.sql for the reasons.
CREATE TABLE removed_identities (
  connector_id TEXT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  subject      TEXT NOT NULL,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  linked_at    BIGINT NOT NULL,
  removed_at   BIGINT NOT NULL,
  PRIMARY KEY (connector_id, subject)
);
CREATE INDEX removed_identities_user ON removed_identities(user_id);
