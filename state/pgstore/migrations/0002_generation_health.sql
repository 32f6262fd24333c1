-- Version 2: a spore's wish generation and the last health a reconcile
-- pass recorded as a transition event (state.Spore Generation, Health,
-- HealthReason). Existing rows get 0 and ''. A constant default makes
-- ADD COLUMN a catalog change: the table is not rewritten.

ALTER TABLE sporectl.spores
    -- bigint: Go's uint64 is kept up to math.MaxInt64 (state.Spore.Validate
    -- refuses more), so the CHECK below is the only bound that matters.
    ADD COLUMN generation    bigint NOT NULL DEFAULT 0 CHECK (generation >= 0),
    ADD COLUMN health        text   NOT NULL DEFAULT '',
    ADD COLUMN health_reason text   NOT NULL DEFAULT '';
