-- The issuer the server last started with (LATCHKEY_ISSUER, or its default), recorded by the
-- server once it listens, so that the admin commands run from another shell, without the server's
-- environment, print addresses on the server's issuer (a connector's redirect URI, a link) and say
-- so when their own LATCHKEY_ISSUER differs. One row: the newest start wins.
CREATE TABLE recorded_issuer (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  issuer      TEXT NOT NULL,
  recorded_at INTEGER NOT NULL
) STRICT;
