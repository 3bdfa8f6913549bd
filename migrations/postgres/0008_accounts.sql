-- Accounts people control (issue 17); see migrations/0008_accounts.sql for the reasons.
-- The public id's DEFAULT is volatile, so adding the column rewrites the table and gives every
-- existing session an id of its own (PostgreSQL 13+: gen_random_uuid, 122 random bits, as 32 hex
-- digits like SQLite's); it stays, for sessions inserted by instances of the previous version still
-- running during a rolling upgrade. sessions(user_id) is indexed since 0001.
ALTER TABLE sessions ADD COLUMN public_id TEXT NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '');
CREATE UNIQUE INDEX sessions_public_id ON sessions(public_id);
ALTER TABLE sessions ADD COLUMN ip TEXT;
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
ALTER TABLE sessions ADD COLUMN last_seen_at BIGINT;

ALTER TABLE authorization_codes ADD COLUMN approved_ip TEXT;
ALTER TABLE authorization_codes ADD COLUMN approved_user_agent TEXT;
ALTER TABLE authorization_codes ADD COLUMN session_id TEXT;
ALTER TABLE refresh_tokens ADD COLUMN approved_ip TEXT;
ALTER TABLE refresh_tokens ADD COLUMN approved_user_agent TEXT;
ALTER TABLE refresh_tokens ADD COLUMN session_id TEXT;
CREATE INDEX refresh_tokens_live ON refresh_tokens(user_id) WHERE rotated_at IS NULL AND revoked_at IS NULL AND superseded_at IS NULL;

CREATE TABLE email_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  purpose    TEXT NOT NULL CHECK (purpose IN ('password_reset', 'email_verification')),
  email      TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at    BIGINT
);
CREATE INDEX email_tokens_user ON email_tokens(user_id, purpose, created_at);
CREATE INDEX email_tokens_expires_at ON email_tokens(expires_at);

-- RP-Initiated and Back-Channel Logout: where a client may be sent after a sign-out (exact
-- matches, JSON array like redirect_uris), and where it hears that a session ended.
ALTER TABLE clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE clients ADD COLUMN backchannel_logout_uri TEXT;
CREATE INDEX authorization_codes_session ON authorization_codes(session_id) WHERE session_id IS NOT NULL;
CREATE INDEX refresh_tokens_session ON refresh_tokens(session_id) WHERE session_id IS NOT NULL;
