-- Version 5: a spore's wish and its status are written apart
-- (state.Tx PutWish, PutStatus), and a status records the wish generation
-- it was concluded against (state.Status ObservedGeneration), so a pass
-- that read an older wish cannot write over a newer one. Existing rows
-- get 0, not their generation: a status written by an older binary may
-- have been concluded from an older wish, and claiming the newest would
-- hide that. Nothing reads the column to decide; the next pass re-reads
-- the spore inside its transaction and writes at the generation it finds.
-- A constant default makes ADD COLUMN a catalog change: the table is not
-- rewritten.
--
-- health becomes a state's name (state.Health: empty, or a capital letter
-- then letters, at most 32 bytes). A row from before that does not fit
-- stops the migration, naming the spore; it is never rewritten here,
-- because what it should say is a person's call. ADD CONSTRAINT would
-- refuse it too, but without saying which row.

DO $$
DECLARE
    bad record;
BEGIN
    SELECT id, health INTO bad FROM sporectl.spores
        WHERE health !~ '^([A-Z][A-Za-z]{0,31})?$' ORDER BY id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'spore % has health %, which is not a health state''s name (empty, or a capital letter then letters, at most 32 bytes); set it to a name or to '''' (none recorded: the next reconcile pass records it again), then run sporectl init again',
            bad.id, to_json(bad.health)::text;
    END IF;
END
$$;

ALTER TABLE sporectl.spores
    ADD COLUMN observed_generation bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT spores_observed_generation_check
        CHECK (observed_generation >= 0 AND observed_generation <= generation),
    ADD CONSTRAINT spores_health_check
        CHECK (health ~ '^([A-Z][A-Za-z]{0,31})?$');
