-- An exec mutation records its command: argv, exit code and duration.
ALTER TABLE mutations ADD COLUMN exec jsonb;
