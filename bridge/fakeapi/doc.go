// Package fakeapi is a fake Anthropic Messages API for tests: an HTTP
// handler that answers POST /v1/messages with scripted replies, streamed as
// server-sent events the way the real API streams them (message_start,
// content_block_*, message_delta, message_stop), so that the real Claude
// Code can run whole turns — including tool calls it executes itself —
// without a network or a key.
//
// Replies are chosen statelessly from the request: the newest user prompt
// (a user message that is not only tool results) selects a Rule, and the
// number of assistant messages after that prompt selects the step. Claude
// Code's retries and side requests therefore never shift the script.
//
// The package must never be linked into the sporectl binary: it exists for
// tests (and later end-to-end tests) only.
package fakeapi
