package bridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		name, text string
		problem    string
		at         int
	}{
		{"plain", "hello", "", 0},
		{"newline and tab", "a\n\tb\n", "", 0},
		{"unicode", "é — 🍄 \ufffd", "", 0},
		{"at the bound", strings.Repeat("x", 16), "", 0},
		{"invalid UTF-8", "a\xffb", TextInvalidUTF8, 0},
		{"empty", "", TextEmpty, 0},
		{"blank", " \n\t ", TextEmpty, 0},
		{"too large", strings.Repeat("x", 17), TextTooLarge, 0},
		{"carriage return", "a\r\nb", TextControl, 1},
		{"escape", "ok \x1b[31mred", TextControl, 3},
		{"NUL", "a\x00", TextControl, 1},
		{"DEL", "a\x7f", TextControl, 1},
		{"C1", "ab\u009b", TextControl, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckText(c.text, 16)
			if c.problem == "" {
				require.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			require.Equal(t, c.problem, err.Problem)
			require.Equal(t, c.at, err.At)
			require.NotEmpty(t, err.Error())
		})
	}
}
