package reconcile_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
)

func TestTailText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		max  int
		want string
		cut  bool
	}{
		{"", 3, 100, "", false},
		{"a\nb\nc\n", 2, 100, "b\nc\n", false},
		{"a\nb\nc", 2, 100, "b\nc", false},
		{"a\nb\nc\n", 5, 100, "a\nb\nc\n", false},
		{"a\nb\nc\n", 1, 100, "c\n", false},
		{"aaaa\nbb\ncc\n", 5, 7, "bb\ncc\n", true},
		{"aaaa\nbb\ncc\n", 5, 5, "cc\n", true},
	} {
		got, cut := reconcile.TailText(c.in, c.n, c.max)
		require.Equal(t, c.want, got, "%q %d", c.in, c.n)
		require.Equal(t, c.cut, cut, "%q", c.in)
	}
}
