package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error is why a body was refused. Its message is a sentence fragment
// ("field \"wake\" appears more than once") for the caller to put after
// what it was reading; it never quotes the body.
type Error struct {
	// Field is the name of the member concerned: "" when the problem is
	// not one member's, or when its name is not plain (see the package doc).
	Field string
	msg   string
}

func (e *Error) Error() string { return e.msg }

// maxPlainName bounds a name an error may repeat.
const maxPlainName = 64

// Decode decodes b, the whole body, into v (a pointer to a struct): one
// JSON object, nothing after it, under the rules of the package doc. On an
// error v may be partly filled and must not be used.
func Decode(b []byte, v any) error {
	// A bytes.Buffer is parsed in place, not copied.
	dec := jsontext.NewDecoder(bytes.NewBuffer(b))
	if k := dec.PeekKind(); k != '{' {
		if _, err := dec.ReadValue(); err != nil {
			return problem(b, err)
		}
		return &Error{msg: "the body is not a JSON object"}
	}
	if err := json.UnmarshalDecode(dec, v, json.RejectUnknownMembers(true)); err != nil {
		return problem(b, err)
	}
	switch _, err := dec.ReadToken(); {
	case err == io.EOF:
		return nil
	case err == nil:
		return &Error{msg: "the body holds more than one JSON value"}
	default:
		return &Error{msg: fmt.Sprintf("the body holds something after its JSON object (at byte %d)", dec.InputOffset())}
	}
}

// problem says what the decoder found, in words of our own: the
// library's messages quote the input.
func problem(b []byte, err error) error {
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case errors.As(err, &syn):
		name, plain := member(syn.JSONPointer)
		where := ""
		if plain {
			where = fmt.Sprintf(" in field %q", name)
		}
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			if !plain {
				return &Error{msg: "a field appears more than once"}
			}
			return &Error{Field: name, msg: fmt.Sprintf("field %q appears more than once", name)}
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return empty(b)
		case !utf8.Valid(b):
			return &Error{Field: name, msg: "the body is not valid UTF-8" + where}
		case strings.Contains(syn.Err.Error(), "surrogate"):
			// jsontext refuses a \u escape of a lone surrogate; its error
			// has no type of its own.
			return &Error{Field: name, msg: `a \u escape that is not a character (a lone surrogate)` + where}
		}
		return &Error{Field: name, msg: fmt.Sprintf("malformed JSON%s at byte %d", where, syn.ByteOffset)}
	case errors.As(err, &sem):
		name, plain := member(sem.JSONPointer)
		switch {
		case errors.Is(sem.Err, json.ErrUnknownName) && plain:
			return &Error{Field: name, msg: fmt.Sprintf("unknown field %q", name)}
		case errors.Is(sem.Err, json.ErrUnknownName):
			return &Error{msg: "an unknown field (its name is not shown)"}
		case sem.JSONPointer == "":
			return &Error{msg: "the body is not a JSON object"}
		case plain:
			return &Error{Field: name, msg: fmt.Sprintf("field %q must be %s", name, want(sem.GoType))}
		}
		return &Error{msg: "a field has the wrong type"}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return empty(b)
	}
	return &Error{msg: "malformed JSON"}
}

func empty(b []byte) *Error {
	if len(bytes.TrimSpace(b)) == 0 {
		return &Error{msg: "the body is empty"}
	}
	return &Error{msg: "the body ends before its JSON object does (malformed JSON)"}
}

// member is the name of the top-level member p points to, and whether it
// is plain enough to repeat in an error.
func member(p jsontext.Pointer) (string, bool) {
	if p == "" || strings.Count(string(p), "/") != 1 {
		return "", false
	}
	name := p.LastToken()
	if name == "" || len(name) > maxPlainName {
		return "", false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", false
		}
	}
	return name, true
}

// want says what a field of Go type t takes.
func want(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}
