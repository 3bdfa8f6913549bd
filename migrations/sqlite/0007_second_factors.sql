-- Second factors (issue 16): TOTP apps, passkeys (WebAuthn) and recovery codes, and how each
-- sign-in was made (RFC 8176 amr), carried from the session into the codes, device approvals and
-- refresh families it leads to, so that tokens say it and an acr_values request can be held to it.
-- A person's factors go with the person (ON DELETE CASCADE).

-- One TOTP app per person (RFC 6238). last_step is the latest time step whose code was accepted:
-- a code is good once (RFC 6238 §5.2), so only a later step is accepted, in one conditional UPDATE
-- (two requests with the same code race for it and one loses).
CREATE TABLE totp_credentials (
  user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  secret     TEXT NOT NULL,               -- the base32 secret, sealed (crypto/secret_box.ts, context totp:<user_id>)
  last_step  INTEGER NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;

-- Passkeys. The credential id is the authenticator's (base64url, compared byte for byte) and
-- unique across all users: an assertion names it before anyone is known, and one registered to
-- someone else must not be taken over by registering it again.
CREATE TABLE webauthn_credentials (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  public_key   TEXT NOT NULL,             -- COSE public key, base64url
  counter      INTEGER NOT NULL,          -- signature counter last seen (0 when the authenticator keeps none)
  transports   TEXT NOT NULL DEFAULT '[]', -- JSON array, as the browser reported them (hints for the next sign-in)
  name         TEXT NOT NULL,             -- the person's name for it
  backed_up    INTEGER NOT NULL CHECK (backed_up IN (0, 1)), -- synced to the person's other devices
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER
) STRICT;
CREATE INDEX webauthn_credentials_user ON webauthn_credentials(user_id);

-- Recovery codes, stored only as digests like every bearer secret. Each is spent once (used_at, set
-- by one conditional UPDATE) and kept until a new set replaces them all, so the account page can
-- say how many are left.
CREATE TABLE recovery_codes (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code_hash  TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  used_at    INTEGER,
  PRIMARY KEY (user_id, code_hash)
) STRICT;

-- How the person signed in, space-separated in the order used ("pwd otp"); '' (no method recorded)
-- for rows made before this version.
ALTER TABLE sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE authorization_codes ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE refresh_tokens ADD COLUMN amr TEXT NOT NULL DEFAULT '';
ALTER TABLE device_grants ADD COLUMN amr TEXT NOT NULL DEFAULT '';
-- The acr_values the device asked for at /oauth/device/code ('' when none), for the approval to honour.
ALTER TABLE device_grants ADD COLUMN acr_values TEXT NOT NULL DEFAULT '';
