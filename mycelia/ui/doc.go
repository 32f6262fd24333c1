// Package ui is the page operators read a colony on (docs/page.md):
// `sporectl serve` mounts it under /ui/. The fleet page says what every
// spore is doing now; a spore's page is its conversation, a page at a
// time from the end of its log, with a live tail by Server-Sent Events.
//
// It reads only the store and the observation of a read-only reconcile
// pass, never a bridge directly, so it shows sleeping spores as well as
// awake ones and any number of serve processes may answer for one store.
// The one thing it writes is an operator's prompt, through the same
// outbox path as `sporectl prompt` (outbox.Send).
//
// Everything it shows came from agents, people or other spores, so none
// of it is trusted: every value goes through html/template (after
// reconcile/transcript has made it displayable), the agent's text is
// markdown rendered safely (markdown.go), the live script inserts only the
// server-rendered <li> of each line (parsed in an inert template), and
// every answer carries a strict
// Content-Security-Policy (no script without the page's nonce, nothing
// from anywhere but this server), nosniff and frame denial.
package ui
