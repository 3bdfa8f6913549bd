-- The origins from which a client's browser code may call the server (`clients add --web-origin`,
-- `web_origins` in registration metadata): a JSON array of serialised origins (scheme://host[:port],
-- lower case, no default port), compared exactly with the Origin header of cross-origin requests
-- (Fetch standard, CORS protocol). Existing clients have none: no cross-origin access until an
-- operator grants it.
ALTER TABLE clients ADD COLUMN web_origins TEXT NOT NULL DEFAULT '[]';
