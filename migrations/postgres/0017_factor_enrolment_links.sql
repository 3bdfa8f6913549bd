-- One-time links that let a person set up their first second factor where a password alone may
-- not (an account holding the `admin` role); see migrations/0015_factor_enrolment_links.sql for
-- the reasons. They share the table of the links sent by email, under a purpose of their own.
ALTER TABLE email_tokens DROP CONSTRAINT email_tokens_purpose_check;
ALTER TABLE email_tokens ADD CONSTRAINT email_tokens_purpose_check CHECK (purpose IN ('password_reset', 'email_verification', 'factor_enrolment'));
