-- Pushed Authorization Requests (RFC 9126) (issue 19); see migrations/0011_par.sql for the reasons.
ALTER TABLE clients ADD COLUMN require_par BOOLEAN NOT NULL DEFAULT false;

-- parameters is TEXT, not jsonb: the JSON text comes back byte for byte (jsonb could not hold a
-- U+0000 escape a client sent).
CREATE TABLE pushed_requests (
  request_hash TEXT PRIMARY KEY,
  client_id    TEXT NOT NULL,
  parameters   TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  expires_at   BIGINT NOT NULL,
  used_at      BIGINT
);
CREATE INDEX pushed_requests_expires_at ON pushed_requests(expires_at);
