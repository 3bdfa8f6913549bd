-- Accounts people control (issue 17): "Devices and apps" lists every browser session and every
-- live refresh-token family with where it was made from, a person or an operator can end any one
-- of them, and a forgotten password is reset through a link sent by email.

-- Sessions get a public id: random, not derived from the cookie, so that a page, a command or an
-- id_token (`sid`) can name a session without its digest ever leaving the store. SQLite cannot add
-- a NOT NULL column without a constant default, so the table is rebuilt: every existing session
-- gets a random id from the DEFAULT as it is copied, and so does a session inserted by a process
-- of the previous version still running beside the one that migrated. Also where the sign-in was
-- made from (address, User-Agent) and the latest request seen with it (recorded every few minutes).
CREATE TABLE sessions_new (
  id_hash        TEXT PRIMARY KEY,
  public_id      TEXT NOT NULL DEFAULT (lower(hex(randomblob(16)))),
  user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  auth_time      INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  expires_at     INTEGER NOT NULL,
  interaction_id TEXT,
  amr            TEXT NOT NULL DEFAULT '',
  ip             TEXT,
  user_agent     TEXT,
  last_seen_at   INTEGER
) STRICT;
INSERT INTO sessions_new (id_hash, user_id, auth_time, created_at, expires_at, interaction_id, amr)
  SELECT id_hash, user_id, auth_time, created_at, expires_at, interaction_id, amr FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE UNIQUE INDEX sessions_public_id ON sessions(public_id);
CREATE INDEX sessions_expires_at ON sessions(expires_at);
-- A person's sessions are listed on /account and all but one ended by a password change.
CREATE INDEX sessions_user ON sessions(user_id);

-- Where a grant was approved from, as its confirmation page showed it (the device's request in the
-- device flow, the person's browser in the code flow), and the session (public id) it was made in:
-- carried from the code into the refresh family, and along every rotation. NULL for older rows.
ALTER TABLE authorization_codes ADD COLUMN approved_ip TEXT;
ALTER TABLE authorization_codes ADD COLUMN approved_user_agent TEXT;
ALTER TABLE authorization_codes ADD COLUMN session_id TEXT;
ALTER TABLE refresh_tokens ADD COLUMN approved_ip TEXT;
ALTER TABLE refresh_tokens ADD COLUMN approved_user_agent TEXT;
ALTER TABLE refresh_tokens ADD COLUMN session_id TEXT;
-- A family's live token (neither rotated, revoked nor superseded) among the many rotated ones kept
-- until the family ends: what "Devices and apps" and `sessions list` look for.
CREATE INDEX refresh_tokens_live ON refresh_tokens(user_id) WHERE rotated_at IS NULL AND revoked_at IS NULL AND superseded_at IS NULL;

-- Links sent by email (password reset, email verification), stored only as the SHA-256 of their
-- secret like every bearer secret, each spent once by one conditional UPDATE (used_at). `email` is
-- the address it was sent to: a verification counts only while the user's email is still that one.
CREATE TABLE email_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  purpose    TEXT NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
  email      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER
) STRICT;
-- How many links an account was sent lately (a per-account limit), and the purge.
CREATE INDEX email_tokens_user ON email_tokens(user_id, purpose, created_at);
CREATE INDEX email_tokens_expires_at ON email_tokens(expires_at);

-- RP-Initiated and Back-Channel Logout: where a client may be sent after a sign-out (exact
-- matches, JSON array like redirect_uris), and where it hears that a session ended.
ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE clients ADD COLUMN backchannel_logout_uri TEXT;
CREATE INDEX authorization_codes_session ON authorization_codes(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id) WHERE session_id IS NOT NULL;
