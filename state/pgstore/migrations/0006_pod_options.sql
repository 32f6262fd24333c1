-- Version 6: a spore's pod options (state.Spec Pod: runtime class, node
-- selector, tolerations, Secrets for the environment, labels,
-- annotations), which the kube runtime puts on its pod. A small bounded
-- JSON document read and written with the row, never queried inside: json
-- keeps it as written. NULL: none. Nullable without a default, so ADD
-- COLUMN does not rewrite the table.

ALTER TABLE sporectl.spores
    ADD COLUMN spec_pod json;
