package mycelia

import (
	"errors"
	"io"
	"net/http"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/strictjson"
	"github.com/sporectl/sporectl/state"
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

// checkText refuses a message text as everything that takes a text does
// (bridge.CheckText: UTF-8, not blank, no control character but newline
// and tab), within MaxTextBytes: too long is 413, the rest 400. (Invalid
// UTF-8 and lone surrogates never get this far: decodeBody refuses them,
// so a U+FFFD here is the sender's.)
func checkText(field, s string) error {
	e := bridge.CheckText(s, MaxTextBytes)
	switch {
	case e == nil:
		return nil
	case e.Problem == bridge.TextTooLarge:
		return errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "%s", e.Of(field))
	}
	return errorf(http.StatusBadRequest, CodeBadRequest, "%s", e.Of(field))
}

// checkName validates a role (or other name) against the id grammar.
func checkName(what, v string) error {
	if err := state.ValidateName(what, v); err != nil {
		return errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	return nil
}
