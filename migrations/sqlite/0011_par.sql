-- Pushed Authorization Requests (RFC 9126) (issue 19).

-- A client registered with --require-par must push its authorization requests (RFC 9126 §5):
-- /authorize refuses it anything but a request_uri from POST /oauth/par.
ALTER TABLE clients ADD COLUMN require_par INTEGER NOT NULL DEFAULT 0 CHECK (require_par IN (0, 1));

-- A pushed request, kept under the SHA-256 of the random part of its request_uri (the URI itself
-- exists only in the answer to the client), with the parameters as pushed (a JSON object of
-- strings, client authentication removed) so that any instance can resolve it. Single use: used_at
-- is set by the one /authorize that redeems it. Purged once expired (60 s after it was pushed). No
-- foreign key on client_id: /authorize looks the client up again, so a removed client's request
-- leads nowhere, and pushing never races a removal.
CREATE TABLE pushed_requests (
  request_hash TEXT PRIMARY KEY,
  client_id    TEXT NOT NULL,
  parameters   TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  used_at      INTEGER
) STRICT;
CREATE INDEX pushed_requests_expires_at ON pushed_requests(expires_at);
