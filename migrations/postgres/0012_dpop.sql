-- DPoP (RFC 9449 §5): the key a public client's refresh-token family is bound to.
ALTER TABLE refresh_tokens ADD COLUMN dpop_jkt TEXT;
-- RFC 9449 §10: an authorization code bound to a DPoP key (dpop_jkt, or the proof sent to PAR).
ALTER TABLE authorization_codes ADD COLUMN dpop_jkt TEXT;
