-- A node being drained (PostgreSQL's; here so both stores have one
-- schema).
ALTER TABLE nodes ADD COLUMN draining INTEGER NOT NULL DEFAULT 0;
