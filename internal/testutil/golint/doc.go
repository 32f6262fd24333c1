// Package golint holds what the module's lint tests share: the packages
// a package imports or depends on, as `go list` reports them, and a walk
// over the module's non-test Go files that reports where a rule is
// broken, file by file, outside the files exempt from it. Each lint keeps
// its rule and its message; this package only reads the source.
//
// It is for tests only: no package of the binary imports it
// (internal/testutil's TestOnlyTestsImportTestHelpers).
package golint

// Module is the module's import path; the functions here take package
// paths relative to it ("reconcile/outbox").
const Module = "github.com/sporectl/sporectl"
