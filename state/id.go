package state

import (
	"fmt"
)

// MaxIDLen keeps "spore-" + ID within a Kubernetes object name and a DNS
// label (63 bytes), since a spore's ID becomes its pod, claim and secret name.
const MaxIDLen = 57

// ValidateID reports whether id follows the spore ID grammar (docs/ids.md):
// 1 to 57 characters of lowercase ASCII letters, digits and '-', starting
// with a letter and ending with a letter or digit. The same grammar names
// colonies and swarms.
func ValidateID(id string) error {
	return validateName("spore id", id)
}

// ValidateName checks a colony, swarm or role name against the ID grammar;
// what names the kind of name in the error.
func ValidateName(what, name string) error {
	return validateName(what, name)
}

func validateName(what, s string) error {
	if s == "" {
		return &InvalidError{Field: what, Value: s, Reason: "must not be empty"}
	}
	if len(s) > MaxIDLen {
		return &InvalidError{Field: what, Value: s, Reason: fmt.Sprintf("is %d characters long; at most %d are allowed", len(s), MaxIDLen)}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9':
			if i == 0 {
				return &InvalidError{Field: what, Value: s, Reason: "must start with a lowercase letter"}
			}
		case c == '-':
			if i == 0 {
				return &InvalidError{Field: what, Value: s, Reason: "must start with a lowercase letter"}
			}
			if i == len(s)-1 {
				return &InvalidError{Field: what, Value: s, Reason: "must end with a lowercase letter or digit"}
			}
		case c >= 0x80:
			return &InvalidError{Field: what, Value: s, Reason: fmt.Sprintf("contains a non-ASCII character at byte %d; only lowercase letters, digits and '-' are allowed", i+1)}
		default:
			return &InvalidError{Field: what, Value: s, Reason: fmt.Sprintf("contains %q at position %d; only lowercase letters, digits and '-' are allowed", rune(c), i+1)}
		}
	}
	return nil
}
