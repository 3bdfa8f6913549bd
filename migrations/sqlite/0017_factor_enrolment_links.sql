-- One-time links that let a person set up their first second factor where a password alone may
-- not (an account holding the `admin` role): made by an operator (`latchkey users mfa-enroll`) or
-- by another administrator in the console, handed over outside Latchkey, never mailed. They are
-- single-use secrets bound to one account, like the links sent by email, so they live in the same
-- table under a purpose of their own: stored only as SHA-256, spent by one conditional UPDATE,
-- purged like the others. `email` is the account's address when the link was made (kept for the
-- record; it plays no part in using the link).
--
-- SQLite cannot change a CHECK constraint in place: the table is made again with the wider one and
-- its rows copied over (nothing refers to it).
CREATE TABLE email_tokens_next (
  token_hash TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  purpose    TEXT NOT NULL CHECK (purpose IN ('password_reset', 'email_verification', 'factor_enrolment')),
  email      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER
) STRICT;
INSERT INTO email_tokens_next (token_hash, user_id, purpose, email, created_at, expires_at, used_at)
  SELECT token_hash, user_id, purpose, email, created_at, expires_at, used_at FROM email_tokens;
DROP TABLE email_tokens;
ALTER TABLE email_tokens_next RENAME TO email_tokens;
CREATE INDEX email_tokens_user ON email_tokens(user_id, purpose, created_at);
CREATE INDEX email_tokens_expires_at ON email_tokens(expires_at);
