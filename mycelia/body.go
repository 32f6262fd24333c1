package mycelia

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/strictjson"
)

// decodeBody reads the request body, at most MaxBodyBytes, and decodes
// exactly one JSON object of v's type from it, strictly (package
// strictjson): valid UTF-8, no \u escape of a lone surrogate, no field v
// does not have, no name twice or in another case, nothing after it.
// Refusals are 400 or 413 and happen before anything is written.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength > MaxBodyBytes {
		return tooLarge()
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return tooLarge()
	case err != nil:
		return errorf(http.StatusBadRequest, CodeBadRequest, "the request body could not be read")
	}
	if err := strictjson.Decode(b, v); err != nil {
		return errorf(http.StatusBadRequest, CodeBadRequest, "the request body is not the JSON object this route takes: %v", err)
	}
	return nil
}

func tooLarge() *Error {
	return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "the request body is larger than %d bytes", MaxBodyBytes)
}

// checkText refuses a message text that is blank, longer than
// MaxTextBytes (413), or holds a control character other than newline
// and tab (C0, DEL, C1). (Invalid UTF-8 and lone surrogates never get
// this far: decodeBody refuses them, so a U+FFFD here is the sender's.)
func checkText(field, s string) error {
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
		}
	}
	return nil
}

// checkName validates a role (or other name) against the id grammar.
func checkName(what, v string) error {
	if err := state.ValidateName(what, v); err != nil {
		return errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	return nil
}
