package state

import (
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	ok := []string{"alpha", "worker-7", "a", "build-bot-2", strings.Repeat("a", 57)}
	bad := map[string]string{
		"":                      "must not be empty",
		"Alpha":                 "contains 'A' at position 1",
		"7worker":               "must start with a lowercase letter",
		"-x":                    "must start with a lowercase letter",
		"x-":                    "must end with a lowercase letter or digit",
		"under_score":           "contains '_' at position 6",
		"émile":                 "non-ASCII character at byte 1",
		strings.Repeat("a", 58): "at most 57",
		"a b":                   "contains ' ' at position 2",
	}
	for _, id := range ok {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	for id, want := range bad {
		err := ValidateID(id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateID(%q) = %v, want an error containing %q", id, err, want)
		}
	}
}

func TestSporeValidateExactDesired(t *testing.T) {
	s := Spore{Wish: Wish{ID: "a", Colony: "c", Rank: RankSpore, Desired: "running"}}
	if err := s.Validate(); err == nil {
		t.Fatal("lowercase desired state accepted; stores must agree on one spelling")
	}
	s.Desired = Running
	s.Spec.Image = "img\x00"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("NUL in spec image: %v", err)
	}
}

func TestTokenHash(t *testing.T) {
	tok, h, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if !h.Valid() || !h.Matches(tok) || h.Matches(tok[:len(tok)-1]) {
		t.Fatal("token hash does not verify its token only")
	}
	if TokenHash(tok).Valid() {
		t.Fatal("a plaintext token passes as a hash")
	}
}
