-- Second factors (issue 16); see migrations/0007_second_factors.sql for the reasons.
CREATE TABLE totp_credentials (
  user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  secret     TEXT NOT NULL,
  last_step  BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE webauthn_credentials (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  public_key   TEXT NOT NULL,
  counter      BIGINT NOT NULL,
  transports   TEXT NOT NULL DEFAULT '[]',
  name         TEXT NOT NULL,
  backed_up    BOOLEAN NOT NULL,
  created_at   BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE INDEX webauthn_credentials_user ON webauthn_credentials(user_id);

CREATE TABLE recovery_codes (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code_hash  TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  used_at    BIGINT,
  PRIMARY KEY (user_id, code_hash)
);

ALTER TABLE sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE authorization_codes ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE refresh_tokens ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE device_grants ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE device_grants ADD COLUMN acr_values TEXT NOT NULL DEFAULT '';
