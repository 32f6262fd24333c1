-- Version 7: idle sleep (docs/sleep.md). A spore's SleepAfter in
-- milliseconds (0: its colony's), who set its desired state when it was
-- not a person (state.DesiredBy: '' a person, 'idle', 'budget'), and when
-- a pass last saw it active (NULL: never). Constant defaults, so ADD
-- COLUMN is a catalog change: the table is not rewritten.

ALTER TABLE sporectl.spores
    ADD COLUMN sleep_after_ms bigint NOT NULL DEFAULT 0 CHECK (sleep_after_ms >= 0),
    ADD COLUMN desired_by     text   NOT NULL DEFAULT '' CHECK (desired_by IN ('', 'idle', 'budget')),
    ADD COLUMN active_at      timestamptz;
