package strictjson

import (
	stdjson "encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// body is a route's body as the routes have them.
type body struct {
	Text string `json:"text"`
	Wake bool   `json:"wake,omitempty"`
	N    int    `json:"n,omitempty"`
}

// TestDecodeRefuses: each rule of the package doc, checked on the library
// rather than assumed. The first three are what encoding/json accepts.
func TestDecodeRefuses(t *testing.T) {
	cases := []struct {
		name, in string
		msg      string
		field    string
		// v1 says whether encoding/json (with DisallowUnknownFields)
		// accepts it: the reason this package exists.
		v1 bool
	}{
		{"duplicate name", `{"wake":false,"wake":true}`, `field "wake" appears more than once`, "wake", true},
		{"duplicate text", `{"text":"a","text":"b"}`, `field "text" appears more than once`, "text", true},
		{"duplicate spelled with an escape", `{"wake":false,"wak\u0065":true}`, `field "wake" appears more than once`, "wake", true},
		{"case variant", `{"Text":"a"}`, `unknown field "Text"`, "Text", true},
		{"upper case", `{"text":"a","WAKE":true}`, `unknown field "WAKE"`, "WAKE", true},
		{"lone surrogate beside U+FFFD", `{"text":"\ud800 \ufffd"}`, `a \u escape that is not a character (a lone surrogate) in field "text"`, "text", true},
		{"lone surrogate", `{"text":"a\ud800b"}`, "lone surrogate", "text", true},
		{"lone low surrogate", `{"text":"\udc00"}`, "lone surrogate", "text", true},
		{"invalid UTF-8", "{\"text\":\"caf\xe9\"}", `the body is not valid UTF-8 in field "text"`, "text", true},
		{"unknown field", `{"text":"a","from":"arch"}`, `unknown field "from"`, "from", false},
		{"unknown field, name not plain", `{"text":"a","fr om":1}`, "an unknown field (its name is not shown)", "", false},
		{"empty", ``, "the body is empty", "", false},
		{"blank", " \n\t", "the body is empty", "", false},
		{"cut short", `{"text":"a"`, "the body ends before its JSON object does", "", false},
		{"null", `null`, "the body is not a JSON object", "", true},
		{"array", `["a"]`, "the body is not a JSON object", "", false},
		{"string", `"a"`, "the body is not a JSON object", "", false},
		{"two values", `{"text":"a"} {"text":"b"}`, "the body holds more than one JSON value", "", false},
		{"garbage after", `{"text":"a"}x`, "the body holds something after its JSON object (at byte 12)", "", false},
		{"garbage", `{x}`, "malformed JSON at byte 1", "", false},
		{"raw control", "{\"text\":\"a\x01b\"}", `malformed JSON in field "text"`, "text", false},
		{"wrong type", `{"wake":"yes"}`, `field "wake" must be true or false`, "wake", false},
		{"wrong type text", `{"text":7}`, `field "text" must be a string`, "text", false},
		{"not a whole number", `{"n":1.5}`, `field "n" must be a whole number`, "n", false},
		{"byte order mark", "\ufeff{}", "malformed JSON at byte 0", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v body
			err := Decode([]byte(c.in), &v)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Error(), c.msg)
			require.Equal(t, c.field, e.Field)

			var old body
			dec := stdjson.NewDecoder(strings.NewReader(c.in))
			dec.DisallowUnknownFields()
			require.Equal(t, c.v1, dec.Decode(&old) == nil && !dec.More(), "what encoding/json makes of it")
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	cases := []struct {
		name, in string
		want     body
	}{
		{"all fields", `{"text":"hi","wake":true,"n":3}`, body{Text: "hi", Wake: true, N: 3}},
		{"white space around", " \n{\"text\" : \"hi\"}\r\n\t", body{Text: "hi"}},
		{"no fields", `{}`, body{}},
		{"escaped name", `{"te\u0078t":"x"}`, body{Text: "x"}},
		{"U+FFFD as such", `{"text":"a \ufffd b �"}`, body{Text: "a \ufffd b \ufffd"}},
		{"surrogate pair", `{"text":"\ud83d\ude00"}`, body{Text: "😀"}},
		{"null field", `{"text":null}`, body{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v body
			require.NoError(t, Decode([]byte(c.in), &v))
			require.Equal(t, c.want, v)
		})
	}
}

// marker holds a space, so it is never a plain name an error may repeat.
const marker = "s3cr3t !"

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"text":"hi","wake":true}`, `{"wake":false,"wake":true}`, `{"Text":"a"}`, `{"text":"\ud800 \ufffd"}`,
		`{"text":"` + marker + `"}`, `{"` + marker + `":1}`, `{"text":"a"} {}`, `[1]`, `{"n":1e9}`, "{\"text\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v body
		err := Decode(b, &v)
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e)
			require.NotContains(t, e.Error(), marker, "an error quotes the body")
			require.LessOrEqual(t, len(e.Error()), 200)
			return
		}
		// What is accepted is what encoding/json takes too, to the same
		// value, and its text is valid UTF-8 with no lone surrogate.
		require.True(t, utf8.Valid(b))
		var old body
		require.NoError(t, stdjson.Unmarshal(b, &old))
		require.Equal(t, old, v)
	})
}

// BenchmarkDecode: a tell's body of 1 KiB, strictly and as encoding/json
// (with DisallowUnknownFields) decoded it before.
func BenchmarkDecode(b *testing.B) {
	in := []byte(`{"text":"` + strings.Repeat("a message — ", 80) + `","wake":true}`)
	b.Run("strictjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v body
			if err := Decode(in, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v body
			dec := stdjson.NewDecoder(strings.NewReader(string(in)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
