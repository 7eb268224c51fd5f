-- The SQLite form of postgres/0007_review_author_kind.sql.
ALTER TABLE reviews ADD COLUMN author_kind text NOT NULL DEFAULT '';
