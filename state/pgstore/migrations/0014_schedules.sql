-- Version 14: a colony's scheduled prompts and each one's slot claim
-- (state.Schedule, docs/schedules.md) are kept in the settings document,
-- under its colony's "schedules"; no column changes. A binary of schema
-- 13 decodes the settings leniently and writes them back whole: its
-- `colony set`, `apply` or `init --operator` would drop every schedule
-- and claim without a word. So the schema's number moves on, and that
-- binary refuses the store ("upgrade sporectl").

COMMENT ON COLUMN sporectl.settings.doc IS
    'the state.Settings document; since schema 14 a colony''s "schedules" with their claims ("done")';
