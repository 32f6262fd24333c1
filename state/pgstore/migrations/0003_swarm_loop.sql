-- Version 3: the [swarm] mycologist's `swarm loop` (state.Spore Loop,
-- LoopDue): the interval in milliseconds (0: no loop) and when the next
-- loop prompt is due (NULL: none). A constant default makes ADD COLUMN a
-- catalog change: the table is not rewritten.

ALTER TABLE sporectl.spores
    ADD COLUMN loop_interval_ms bigint NOT NULL DEFAULT 0 CHECK (loop_interval_ms >= 0),
    ADD COLUMN loop_due         timestamptz;
