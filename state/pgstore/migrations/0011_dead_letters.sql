-- Version 10: dead letters (docs/postgres.md). An outbox entry a bridge
-- refused for good keeps its row, marked with when and why (both or
-- neither); the queue (Outbox, Pending) is the rows without the mark.
-- Nullable columns without a default, so ADD COLUMN is a catalog change:
-- no table is rewritten.

ALTER TABLE sporectl.outbox
    ADD COLUMN dead_at     timestamptz,
    ADD COLUMN dead_reason text,
    ADD CONSTRAINT outbox_dead_both CHECK ((dead_at IS NULL) = (dead_reason IS NULL));

-- DeadLetterCounts reads this index alone: its rows are the dead letters.
CREATE INDEX outbox_dead ON sporectl.outbox (spore_id) WHERE dead_at IS NOT NULL;
