// Package metricstest reads Prometheus' text format for the tests of
// reconcile/metrics and of the commands that expose it: the official
// parser (prometheus/common's expfmt), a family's value by its labels, and
// Debian's `promtool check metrics`. It must not be used outside tests.
package metricstest

import (
	"bytes"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is a parsed exposition, by family name.
type Families map[string]*dto.MetricFamily

// Parse parses text with expfmt's TextParser, holding names to the
// classic grammar (what promtool and every scraper accept), failing tb
// when it does not parse.
func Parse(tb testing.TB, text string) Families {
	tb.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		tb.Fatalf("parse the metrics: %v\n%s", err, text)
	}
	return fams
}

// Value is the value of the sample of family name whose labels are
// exactly pairs (name, value, name, value, …): a counter's, a gauge's, or
// a histogram's count. It fails tb when there is no such sample.
func (f Families) Value(tb testing.TB, name string, pairs ...string) float64 {
	tb.Helper()
	mf, ok := f[name]
	if !ok {
		tb.Fatalf("no family %s (have %s)", name, strings.Join(f.Names(), ", "))
	}
	want := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		want[pairs[i]] = pairs[i+1]
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		default:
			return m.GetUntyped().GetValue()
		}
	}
	tb.Fatalf("family %s has no sample with labels %v", name, want)
	return 0
}

// Series counts family name's samples (0 when it is absent).
func (f Families) Series(name string) int {
	if mf, ok := f[name]; ok {
		return len(mf.GetMetric())
	}
	return 0
}

// Names are the families' names, sorted.
func (f Families) Names() []string {
	out := make([]string, 0, len(f))
	for n := range f {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Promtool runs `promtool check metrics` on text and fails t on any
// problem it reports. promtool is $SPORECTL_PROMTOOL (.ci/promtool.sh);
// without it t fails when CI is set and is skipped otherwise, so call it
// in a subtest of its own.
func Promtool(t *testing.T, text string) {
	t.Helper()
	bin := os.Getenv("SPORECTL_PROMTOOL")
	if bin == "" {
		if p, err := exec.LookPath("promtool"); err == nil {
			bin = p
		}
	}
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is required in CI: set SPORECTL_PROMTOOL (source the output of .ci/deps.sh)")
		}
		t.Skip("no promtool: set SPORECTL_PROMTOOL (bash .ci/promtool.sh)")
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n--- the metrics:\n%s", err, out.String(), text)
	}
}
