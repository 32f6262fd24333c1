-- Version 13: what serve's model gateway counted of a spore's model calls
-- (state.GatewayRecord, written by state.CountModelCall in the
-- transaction of the call's count; docs/gateway.md). Two small bounded
-- JSON documents read and written with the rest of the status, never
-- queried inside, kept compactly as activity is (pgstore's gateway.go):
--
--   model_usage: [[unix hour, calls, input tokens, output tokens,
--                  cache creation tokens, cache read tokens, cost micros], ...]
--                at most 168 hours, ascending;
--   model_calls: [["message id", unix hour, input tokens, output tokens,
--                  cache creation tokens, cache read tokens, cost micros], ...]
--                the latest 64 calls counted, oldest first.
--
-- NULL: none. Nullable without a default, so ADD COLUMN does not rewrite
-- the table. A binary of schema 12 neither reads nor writes them, so its
-- passes would judge budgets without the gateway's count: the schema's
-- number moves on and that binary refuses the store ("upgrade sporectl").

ALTER TABLE sporectl.spores
    ADD COLUMN model_usage json,
    ADD COLUMN model_calls json,
    ADD COLUMN model_grant_until timestamptz;

COMMENT ON COLUMN sporectl.spores.model_usage IS
    'model usage the gateway counted per hour: [[unix hour, calls, input, output, cache creation, cache read, cost micros], ...]';
COMMENT ON COLUMN sporectl.spores.model_calls IS
    'latest model calls the gateway counted: [["message id", unix hour, input, output, cache creation, cache read, cost micros], ...]';
COMMENT ON COLUMN sporectl.spores.model_grant_until IS
    'until when an operator''s over-budget prompt lets the spore call the model over its budget (state.GatewayRecord GrantUntil); NULL: no leave';
