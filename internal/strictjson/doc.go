// Package strictjson decodes the JSON object of a request body strictly,
// for every HTTP server of sporectl: serve's pod-facing API (mycelia) and
// the bridge (bridge/server).
//
// A body is exactly one JSON object of the fields of the Go type it is
// decoded into, as github.com/go-json-experiment/json (the basis of
// encoding/json/v2) decodes by default, with unknown names refused:
//
//   - a name that appears twice is refused ({"wake":false,"wake":true}),
//     where encoding/json would keep the last;
//   - names match case-sensitively: "Text" or "WAKE" is an unknown field,
//     where encoding/json would take it for "text" or "wake";
//   - a string must be valid UTF-8, and a \u escape must be a character:
//     a lone surrogate (\ud800) is refused, where encoding/json turns it
//     into U+FFFD silently; so a U+FFFD in a decoded string is one the
//     sender wrote;
//   - the top-level value must be an object (not null, not an array), and
//     nothing but white space may follow it.
//
// An error names the field concerned (only when its name is plain: letters,
// digits, '_', '-', at most 64 bytes) and the byte offset, and never quotes
// the body: what a hostile caller sent does not reach an answer or a log.
//
// The package knows nothing of HTTP: reading the body within its limit and
// deadline, and the status of each refusal, are the caller's.
package strictjson
