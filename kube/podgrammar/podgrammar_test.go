package podgrammar_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/kube/podgrammar"
)

// TestNames: each check's reason for a value ("" valid). That these agree
// with Kubernetes' own is kube's TestPodOptionsGrammarIsKubernetes.
func TestNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		check string
		value string
		want  string
	}{
		{"label key", "team", ""},
		{"label key", "example.com/tier", ""},
		{"label key", "/x", "has an empty prefix before '/'"},
		{"label key", "Example.com/x", "prefix must be lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit"},
		{"label key", "example.com/", "must have a name (after the prefix and '/', if any)"},
		{"label key", long, "name is 64 characters; at most 63"},
		{"label key", "-x", "name must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
		{"label value", "", ""},
		{"label value", "a_b.c-d", ""},
		{"label value", long, "value is 64 characters; at most 63"},
		{"label value", "a b", "value must be empty, or letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
		{"subdomain", "gvisor", ""},
		{"subdomain", "", "must not be empty"},
		{"subdomain", strings.Repeat("a", 254), "is 254 characters; at most 253"},
		{"subdomain", "gVisor", "must be lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit"},
		{"secret", "team-keys", ""},
		{"secret", "Team", "must be lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit"},
		{"secret", "spore-lab-a", "names a spore's own Secret (spore-*), which holds its tokens"},
		{"secret", "sporectl-store", "names one of sporectl's Secrets (sporectl-*: the model's, which every pod gets already, and the store's credentials)"},
	} {
		var got string
		switch tc.check {
		case "label key":
			got = podgrammar.LabelKey(tc.value)
		case "label value":
			got = podgrammar.LabelValue(tc.value)
		case "subdomain":
			got = podgrammar.DNSSubdomain(tc.value)
		case "secret":
			got = podgrammar.SecretName(tc.value)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %q (-want +got):\n%s", tc.check, tc.value, diff)
		}
	}
}

func TestReserved(t *testing.T) {
	for k, want := range map[string]bool{
		"sporectl.dev/spore": true, "sporectl.dev/anything": true, "app.kubernetes.io/managed-by": true,
		"app.kubernetes.io/component": true, "app.kubernetes.io/name": true,
		"app.kubernetes.io/part-of": false, "team": false, "example.com/sporectl.dev": false,
	} {
		if got := podgrammar.Reserved(k); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", k, got, want)
		}
		// The refusal names every reserved key (it is written out).
		if want && !strings.HasPrefix(k, podgrammar.ReservedPrefix) && !strings.Contains(podgrammar.ReservedReason, k) {
			t.Errorf("ReservedReason does not name %s: %s", k, podgrammar.ReservedReason)
		}
	}
}

func TestToleration(t *testing.T) {
	secs := func(n int64) *int64 { return &n }
	type fault struct{ Field, Value, Reason string }
	for _, tc := range []struct {
		name                         string
		key, operator, value, effect string
		seconds                      *int64
		want                         fault
	}{
		{"equal", "sandbox", "Equal", "gvisor", "NoSchedule", nil, fault{}},
		{"exists with seconds", "node.kubernetes.io/unreachable", "Exists", "", "NoExecute", secs(300), fault{}},
		{"every taint", "", "Exists", "", "", nil, fault{}},
		{"empty operator is Equal", "gpu", "", "yes", "", nil, fault{}},
		{"bad key", "-k", "Exists", "", "", nil, fault{"key", "-k", "name must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"}},
		{"exists with a value", "k", "Exists", "v", "", nil, fault{"value", "v", "must be empty when the operator is Exists"}},
		{"equal without a key", "", "Equal", "v", "", nil, fault{"operator", "Equal", "must be Exists when the key is empty"}},
		{"bad value", "k", "Equal", "a b", "", nil, fault{"value", "a b", "value must be empty, or letters, digits, '-', '_' or '.', starting and ending with a letter or digit"}},
		{"bad operator", "k", "In", "", "", nil, fault{"operator", "In", "must be Exists or Equal (empty: Equal)"}},
		{"bad effect", "k", "Exists", "", "Never", nil, fault{"effect", "Never", "must be NoSchedule, PreferNoSchedule, NoExecute or empty (every effect)"}},
		{"seconds without NoExecute", "k", "Exists", "", "NoSchedule", secs(1), fault{"toleration_seconds", "1", "is allowed only with the effect NoExecute"}},
		{"negative seconds", "k", "Exists", "", "NoExecute", secs(-1), fault{"toleration_seconds", "-1", "must not be negative"}},
	} {
		var got fault
		got.Field, got.Value, got.Reason = podgrammar.Toleration(tc.key, tc.operator, tc.value, tc.effect, tc.seconds)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
