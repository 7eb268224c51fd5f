-- The SQLite form of postgres/0004_exec_mutations.sql.
ALTER TABLE mutations ADD COLUMN exec text;
