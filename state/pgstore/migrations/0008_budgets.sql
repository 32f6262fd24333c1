-- Version 8: budgets (docs/budgets.md). A spore's daily budget (0: no
-- limit of that kind), and an outbox entry an operator marked to be
-- delivered over budget. Constant defaults, so ADD COLUMN is a catalog
-- change: no table is rewritten.

ALTER TABLE sporectl.spores
    ADD COLUMN budget_tokens_per_day      bigint NOT NULL DEFAULT 0 CHECK (budget_tokens_per_day >= 0),
    ADD COLUMN budget_cost_per_day_micros bigint NOT NULL DEFAULT 0 CHECK (budget_cost_per_day_micros >= 0);

ALTER TABLE sporectl.outbox
    ADD COLUMN over_budget boolean NOT NULL DEFAULT false;
