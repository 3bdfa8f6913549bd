-- A device code redeemed with a DPoP proof (RFC 9449) may recover a lost answer only with a proof
-- by the same key: the key's thumbprint (RFC 7638) as the redeeming poll proved it. Unset for a
-- redemption without a proof, and for every grant redeemed before this column existed.
ALTER TABLE device_grants ADD COLUMN dpop_jkt TEXT;
