-- A repository's environment (issue 22): plain variables as a JSON object
-- of name → value, and secrets as a JSON object of name → sealed value
-- (base64 of a nonce and AES-GCM ciphertext under the data directory's
-- secrets key; the plain value is never stored).
CREATE TABLE repo_environments (
    repo    text COLLATE "C" PRIMARY KEY REFERENCES repos (name),
    env     text NOT NULL DEFAULT '{}',
    secrets text NOT NULL DEFAULT '{}'
);
-- A session's own plain variables, given at creation (JSON object).
ALTER TABLE sessions ADD COLUMN env text NOT NULL DEFAULT '{}';
