-- Leases on management API resources (`client:web`, `api:https://…`): a conditional change
-- (If-Match) reads, compares and writes, and two server instances sharing this database must not
-- interleave those steps for one resource. The instance that holds the row's lease does them; the
-- others wait. A lease expires (expires_at, epoch seconds by the database's clock), so an instance
-- that crashed while holding one blocks the resource only until then; the holder (a random id
-- per acquisition) removes its row when done.
CREATE TABLE resource_leases (
  resource_key TEXT PRIMARY KEY,
  holder       TEXT NOT NULL,
  expires_at   INTEGER NOT NULL
) STRICT;
