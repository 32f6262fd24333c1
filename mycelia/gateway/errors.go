package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error types of the Messages API's error answers, which Claude Code
// knows: it shows their message, retries a rate_limit_error after its
// retry-after, and stops a turn on a permission_error.
const (
	errAuthentication = "authentication_error"
	errPermission     = "permission_error"
	errRateLimit      = "rate_limit_error"
	errInvalid        = "invalid_request_error"
	errNotFound       = "not_found_error"
	errTooLarge       = "request_too_large"
	errAPI            = "api_error"
)

// apiError is the Messages API's error body.
type apiError struct {
	Type  string      `json:"type"` // always "error"
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// refusal is an answer the gateway gives itself, instead of the
// upstream's.
type refusal struct {
	status     int
	typ        string
	message    string
	retryAfter int // seconds; 0: no retry-after header
}

// write answers r: its status and the Messages API's error body.
func (r refusal) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if r.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(r.retryAfter))
	}
	w.WriteHeader(r.status)
	_ = json.NewEncoder(w).Encode(apiError{Type: "error", Error: errorDetail{Type: r.typ, Message: r.message}})
}
