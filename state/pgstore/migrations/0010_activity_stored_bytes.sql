-- Version 10: an hour of a spore's activity may hold a seventh number,
-- the bytes of agent lines stored in it (state.HourActivity StoredBytes,
-- what the ingest quota counts; docs/bridge.md). The column's form is
-- pgstore's (activity.go); a binary of schema 9 would call such a row
-- corrupt, so the schema's number moves on and that binary refuses the
-- store cleanly ("upgrade sporectl") instead. No row is rewritten.

COMMENT ON COLUMN sporectl.spores.activity IS
    'hours of activity: [[unix hour, turns, tool calls, input tokens, output tokens, cost micros(, stored bytes)], ...]';
