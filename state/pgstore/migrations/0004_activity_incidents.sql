-- Version 4: a spore's activity per hour (state.Spore Activity, kept by
-- ingest for the page's graph and "today" figures) and the incidents a
-- pass raised a summons for (state.Spore Incidents, on the [arch]
-- mycologist). Both are small bounded JSON documents read and written with
-- the row, never queried inside: json keeps them as written. NULL: none.
-- Nullable without a default, so ADD COLUMN does not rewrite the table.

ALTER TABLE sporectl.spores
    ADD COLUMN activity  json,
    ADD COLUMN incidents json;
