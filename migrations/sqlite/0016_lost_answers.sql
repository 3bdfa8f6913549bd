-- A client whose token answer was lost after the server committed it (a crash, a dropped connection)
-- may present what it sent again within LATCHKEY_RETRY_WINDOW: it gets a new pair, and what the
-- lost answer carried is revoked, so there is never a second live branch (RFC 9700 §4.14.2).

-- The access token handed out with each refresh token: revoked when a retry replaces the token unused.
ALTER TABLE refresh_tokens ADD COLUMN access_token_jti TEXT;
-- How many retries a rotated token got after its grace window.
ALTER TABLE refresh_tokens ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;

-- What a device code's redemption handed out (as authorization codes keep it), replaced when the
-- device recovers a lost answer; when the latest tokens were handed out; and how many recoveries.
ALTER TABLE device_grants ADD COLUMN access_token_jti TEXT;
ALTER TABLE device_grants ADD COLUMN refresh_family_id TEXT;
ALTER TABLE device_grants ADD COLUMN issued_at INTEGER;
ALTER TABLE device_grants ADD COLUMN recoveries INTEGER NOT NULL DEFAULT 0;
