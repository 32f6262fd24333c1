-- Version 9: an index of the message ids in each log. A prompt or message
-- event carries its outbox entry's id as its action, and SendOnce looks a
-- repeated id up there (FindAction); without this index that read walked
-- back through every agent line after the message. Partial: agent lines,
-- most rows of this table, are not indexed, so ingest does not pay for it.

CREATE INDEX events_message_action ON sporectl.events (spore_id, action, seq)
    WHERE kind IN ('prompt', 'message');
