-- The readiness check's write probe (GET /readyz): after a write failed for want of space or for an
-- I/O error, the check inserts a row of a few pages here and deletes it in the same transaction,
-- which commits: the probe needs new pages and WAL space as a request's write does, and leaves
-- nothing behind. The table is empty outside that transaction.
CREATE TABLE readiness_probe (
  id     BIGINT PRIMARY KEY,
  filler TEXT NOT NULL
);
