package mycelia

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// decodeBody reads the request body, at most MaxBodyBytes, and decodes
// exactly one JSON object of v's type from it: valid UTF-8, no field v
// does not have, nothing after it. Refusals are 400 or 413 and happen
// before anything is written. It returns the raw bytes for checkText.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge()
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge()
	case err != nil:
		return nil, errorf(http.StatusBadRequest, CodeBadRequest, "the request body could not be read")
	case !utf8.Valid(b):
		return nil, errorf(http.StatusBadRequest, CodeBadRequest, "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, errorf(http.StatusBadRequest, CodeBadRequest, "the request body is not the JSON object this route takes: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(http.StatusBadRequest, CodeBadRequest, "the request body holds more than one JSON value")
	}
	return b, nil
}

func tooLarge() *Error {
	return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "the request body is larger than %d bytes", MaxBodyBytes)
}

// jsonProblem says what encoding/json found, without quoting the body.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty"
	case errors.As(err, &se):
		return "malformed JSON"
	case errors.As(err, &te):
		return "field " + te.Field + " has the wrong type"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "malformed JSON"
}

// checkText refuses a message text that is blank, longer than
// MaxTextBytes (413), or holds a control character other than newline
// and tab (C0, DEL, C1) or a \u escape that did not decode to a character
// (a lone surrogate, which encoding/json turns into U+FFFD silently).
func checkText(field, s string, raw []byte) error {
	switch {
	case strings.TrimSpace(s) == "":
		return errorf(http.StatusBadRequest, CodeBadRequest, "%s is empty", field)
	case len(s) > MaxTextBytes:
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "%s is %d bytes; at most %d are allowed", field, len(s), MaxTextBytes)
	}
	for i, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return errorf(http.StatusBadRequest, CodeBadRequest, "%s holds the control character U+%04X at byte %d", field, r, i)
		case r == utf8.RuneError && !hasReplacementChar(raw):
			return errorf(http.StatusBadRequest, CodeBadRequest, "%s holds a \\u escape that is not a character (a lone surrogate) at byte %d", field, i)
		}
	}
	return nil
}

// hasReplacementChar reports whether the raw body spells U+FFFD itself,
// literally or escaped, so a decoded U+FFFD may be the sender's.
func hasReplacementChar(raw []byte) bool {
	return bytes.Contains(raw, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(raw), []byte(`\ufffd`))
}

// checkName validates a role (or other name) against the id grammar.
func checkName(what, v string) error {
	if err := state.ValidateName(what, v); err != nil {
		return errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	return nil
}
