-- Version 12: the table `sporectl repair` sets damaged rows aside into
-- (docs/postgres.md, docs/recovery.md). Nothing reads it but a person:
-- each row is one row of spores, events, outbox or tokens that a repair
-- moved out of the way, kept whole as to_jsonb of the row (bytea values
-- as their hex text), never deleted by sporectl. No foreign key: the
-- spore it names may be gone.

CREATE TABLE sporectl.damaged (
    id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at       timestamptz NOT NULL,
    spore_id text        COLLATE "C" NOT NULL,
    -- The table the row came from (sporectl.events, …).
    what     text        NOT NULL,
    -- Why it was set aside: what the store could not read in it.
    detail   text        NOT NULL,
    data     jsonb       NOT NULL
);
