-- Version 1: the first schema. See docs/postgres.md for why each table,
-- index and constraint exists. Applied inside one transaction by Init.

CREATE TABLE sporectl.settings (
    -- Exactly one row: the store-wide settings as a JSON document, so a new
    -- Settings field needs no migration. json (not jsonb) keeps the text
    -- as written, including \u0000 escapes that jsonb refuses.
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    doc       json    NOT NULL
);

CREATE TABLE sporectl.spores (
    -- COLLATE "C": ids sort bytewise (the interface's order) whatever
    -- the database's locale, straight from the primary key index.
    id           text        COLLATE "C" PRIMARY KEY,
    colony       text        NOT NULL,
    rank         text        NOT NULL CHECK (rank IN ('spore', 'swarm', 'colony', 'arch')),
    swarm        text        NOT NULL DEFAULT '',
    role         text        NOT NULL DEFAULT '',
    desired      text        NOT NULL CHECK (desired IN ('Running', 'Paused', 'Stopped')),
    spec_image   text        NOT NULL DEFAULT '',
    spec_cpu     text        NOT NULL DEFAULT '',
    spec_memory  text        NOT NULL DEFAULT '',
    spec_storage text        NOT NULL DEFAULT '',
    created      timestamptz NOT NULL,
    updated      timestamptz NOT NULL,
    restarts     integer     NOT NULL DEFAULT 0,
    failures     timestamptz[],
    not_before   timestamptz,
    breaker_open boolean     NOT NULL DEFAULT false,
    bridge_seq   bigint      NOT NULL DEFAULT 0,
    -- The head of the event log. Appending increments it with an UPDATE,
    -- which takes this row's lock: that lock is the per-spore writer mutex
    -- that keeps sequence numbers gapless.
    last_seq     bigint      NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
);

CREATE TABLE sporectl.events (
    spore_id   text        COLLATE "C" NOT NULL,
    seq        bigint      NOT NULL CHECK (seq >= 1),
    at         timestamptz NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('lifecycle', 'prompt', 'agent', 'message', 'breaker')),
    -- action, sender and body (the event's Text) are bytea, not text:
    -- they may carry NUL bytes, which text cannot hold. UTF-8 validity is
    -- checked before insert and by Check.
    action     bytea       NOT NULL DEFAULT '',
    sender     bytea       NOT NULL DEFAULT '',
    body       bytea       NOT NULL DEFAULT '',
    bridge_seq bigint      NOT NULL DEFAULT 0,
    -- The agent's line byte for byte (jsonb would reorder and reformat it).
    line       bytea,
    -- Serves Events (seq > after, ascending) and Tail (descending) as
    -- index range scans, so neither depends on the log's length.
    PRIMARY KEY (spore_id, seq)
);
-- No foreign key to spores on purpose: its per-row check cost about 30% of
-- COPY throughput in BenchmarkIngest. Every write to events happens under
-- the spore row's lock, DeleteSpore removes them in the same transaction,
-- and Check reports orphans.

CREATE TABLE sporectl.outbox (
    spore_id text        COLLATE "C" NOT NULL REFERENCES sporectl.spores (id) ON DELETE CASCADE,
    id       text        NOT NULL,
    -- Queue order; an identity never reuses a value, so order survives
    -- dequeues and re-enqueues.
    pos      bigint      GENERATED ALWAYS AS IDENTITY,
    sender   bytea       NOT NULL DEFAULT '', -- bytea for NUL bytes, as in events
    body     bytea       NOT NULL DEFAULT '',
    at       timestamptz NOT NULL,
    wake     boolean     NOT NULL DEFAULT false,
    PRIMARY KEY (spore_id, id)
);
CREATE INDEX outbox_order ON sporectl.outbox (spore_id, pos);

CREATE TABLE sporectl.tokens (
    spore_id text COLLATE "C" PRIMARY KEY REFERENCES sporectl.spores (id) ON DELETE CASCADE,
    hash     text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$')
);
