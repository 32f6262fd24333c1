package ui

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
)

// parseForm parses a POST's URL-encoded body into r.PostForm and refuses
// a field sent more than once: the handlers read one value of each
// (PostForm.Get takes the first), so csrf=good&csrf=other or
// text=a&text=b would otherwise be half read. The body's limit is the
// caller's (http.MaxBytesReader); a *http.MaxBytesError passes through.
// The error never quotes the body: a field's name is given only when it
// is one of the page's own.
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return errors.New("it is not URL-encoded form data")
	}
	var twice []string
	for k, vs := range r.PostForm {
		if len(vs) > 1 {
			twice = append(twice, k)
		}
	}
	if len(twice) == 0 {
		return nil
	}
	sort.Strings(twice)
	for _, k := range twice {
		if formFields[k] {
			return fmt.Errorf("the field %q is sent more than once", k)
		}
	}
	return errors.New("a field is sent more than once")
}

// formFields are the names of the page's forms' fields.
var formFields = map[string]bool{"csrf": true, "text": true, "wake": true, "over_budget": true, "token": true, "next": true}
