// Package gfm adds to goldmark the two GitHub Flavored Markdown
// extensions the page renders: tables (GFM spec §4.10) and strikethrough
// (§6.5). It is written for this project from the spec, on goldmark's
// public parser and renderer interfaces.
//
// It exists so that the binary does not link goldmark's own extension
// package, whose init compiles its autolink and typographer regexps
// (264 KiB in 2,049 allocations) in every command of sporectl, though
// only serve's page renders markdown (docs/performance.md, "Process start,
// again").
//
// What it leaves out of the spec, on purpose: a pipe escaped inside a
// code span in a cell (`\|`) stays as written (the spec would drop the
// backslash), and a table must have a pipe in its header and delimiter
// rows. A table starts at the line before its delimiter row; the lines of
// the paragraph above it stay a paragraph, as GitHub renders them. It
// emits no attribute but align, with one of three fixed values, so text
// in a cell cannot reach an attribute.
package gfm
