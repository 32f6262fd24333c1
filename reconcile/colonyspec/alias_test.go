package colonyspec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// laughs is a "billion laughs" document of about 30 KB: n spores, each an
// alias of one spore whose pod's labels alias a mapping of n labels, so
// following its aliases decodes n×n values (4 million for n = 2000).
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  pod:\n    labels: &l\n")
	for i := range n {
		fmt.Fprintf(&b, "      k%d: v\n", i)
	}
	b.WriteString("  spores:\n  - &s {id: a, pod: {labels: *l, annotations: *l}}\n")
	for range n {
		b.WriteString("  - *s\n")
	}
	return b.String()
}

// A document whose aliases expand it far past its own size is refused,
// naming the file and the line of the alias where it went past the bound,
// before it is expanded.
func TestReadRefusesAliasesThatExpandTooFar(t *testing.T) {
	doc := laughs(2000)
	docs, err := Read("lol.yaml", []byte(doc))
	require.Nil(t, docs)
	errs := unjoin(err)
	require.Len(t, errs, 1, "one fault, not one per alias: %v", err)
	var fe *Error
	require.ErrorAs(t, errs[0], &fe)
	require.Equal(t, "lol.yaml", fe.File)
	require.Greater(t, fe.Line, 2000+6, "the line of an alias among the spores")
	require.Regexp(t, `^lol\.yaml:\d+: spec\.spores\[\d+\]\S*: its aliases expand the document past \d+ values \(4 a byte of the file\); write the values out, or put what spores share in spec\.defaults$`, fe.Error())
}

// Aliases that repeat a little, as a person writes them, still work.
func TestReadFollowsModestAliases(t *testing.T) {
	_, err := Read("lab.yaml", []byte(laughs(20)))
	require.Error(t, err, "the spores' ids repeat")
	require.NotContains(t, err.Error(), "aliases")
	doc := "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n  - id: a\n    resources: &r {cpu: 2, memory: 3Gi}\n  - id: b\n    resources: *r\n"
	docs, err := Read("lab.yaml", []byte(doc))
	require.NoError(t, err)
	require.Equal(t, "3Gi", *docs[0].Spec.Spores[1].Resources.Memory)
}
