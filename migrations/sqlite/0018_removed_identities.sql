-- Upstream identities removed from the account they were linked to (the person on /account, an
-- administrator in the console, `latchkey users unlink`). A removed identity signs in no more: not
-- as that user, not linked again by its email (which a --trust-email connector would otherwise do
-- at its next sign-in), and not as a fresh account of the same person. The row goes when an
-- administrator allows it again, or with its connector or its user.
CREATE TABLE removed_identities (
  connector_id TEXT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  subject      TEXT NOT NULL,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  linked_at    INTEGER NOT NULL,
  removed_at   INTEGER NOT NULL,
  PRIMARY KEY (connector_id, subject)
) STRICT;
CREATE INDEX removed_identities_user ON removed_identities(user_id);
