package podgrammar

import (
	"fmt"
	"strings"
)

// Kubernetes' own limits.
const (
	maxLabelValue        = 63  // a label value
	maxQualifiedNameName = 63  // a key's name, after its prefix
	maxDNSSubdomain      = 253 // a DNS-1123 subdomain
)

// LabelKey is why k is not a label (or annotation) key by Kubernetes'
// rules for a qualified name: an optional DNS-1123 subdomain prefix and a
// slash, then a name of at most 63 characters, alphanumeric at both ends,
// with '-', '_' and '.' inside.
func LabelKey(k string) string {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if prefix == "" {
			return "has an empty prefix before '/'"
		}
		if r := DNSSubdomain(prefix); r != "" {
			return "prefix " + r
		}
		name = rest
	}
	switch {
	case name == "":
		return "must have a name (after the prefix and '/', if any)"
	case len(name) > maxQualifiedNameName:
		return fmt.Sprintf("name is %d characters; at most %d", len(name), maxQualifiedNameName)
	case !qualifiedPart(name):
		return "name must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

// LabelValue is why v is not a label value: empty, or at most 63
// characters of the label name's grammar.
func LabelValue(v string) string {
	switch {
	case v == "":
		return ""
	case len(v) > maxLabelValue:
		return fmt.Sprintf("value is %d characters; at most %d", len(v), maxLabelValue)
	case !qualifiedPart(v):
		return "value must be empty, or letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

// DNSSubdomain is why v is not a DNS-1123 subdomain (the grammar of most
// Kubernetes object names): at most 253 characters, dot-separated labels
// of lowercase letters, digits and '-', each alphanumeric at both ends.
func DNSSubdomain(v string) string {
	switch {
	case v == "":
		return "must not be empty"
	case len(v) > maxDNSSubdomain:
		return fmt.Sprintf("is %d characters; at most %d", len(v), maxDNSSubdomain)
	}
	for part := range strings.SplitSeq(v, ".") {
		if !dnsLabel(part) {
			return "must be lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit"
		}
	}
	return ""
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// qualifiedPart is Kubernetes' ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func qualifiedPart(s string) bool {
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// dnsLabel is Kubernetes' [a-z0-9]([-a-z0-9]*[a-z0-9])?.
func dnsLabel(s string) bool {
	if s == "" || !lowerAlnum(s[0]) || !lowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !lowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}
