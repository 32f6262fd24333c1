// Package colonyspec is the declarative form of a colony: `Colony`
// documents (apiVersion sporectl/v1), read strictly from YAML with the
// file, line and field of every fault (Read), printed back from the
// store (Export), and compared with the stored spores into the changes
// that make the store say what the documents say (Plan), which Apply
// records through reconcile/wish in the caller's transaction.
// docs/apply.md is the format and its decisions; docs/colony.schema.json
// its JSON Schema.
//
// Plan is pure (documents and stored records in, changes out), so what
// `sporectl apply` and `sporectl diff` would do is tested without a store.
//
// It must never open a transaction (the caller's holds every change of
// every document, or none), write a record but through reconcile/wish,
// observe or start anything (waking what apply recorded Running is the
// caller's pass), or import reconcile, mycelia or cmd/cli.
package colonyspec
