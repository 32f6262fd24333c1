package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
)

// What `mycologist report` prints says whether the [arch] was summoned.
func TestReportResultSaysWhatTheSummonsDid(t *testing.T) {
	for _, tc := range []struct{ summons, want string }{
		{"", "report/report-push-failed recorded in the log of spore/a (event 7)"},
		{mycelia.SummonsRaised, "report/report-push-failed recorded in the log of spore/a (event 7); the [arch] is summoned"},
		{mycelia.SummonsHeld, "report/report-push-failed recorded in the log of spore/a (event 7); the [arch] is not summoned now (you reached your limit of summonses an hour): your next summons counts it"},
	} {
		_, rows := reportResult{mycelia.ReportResponse{Spore: "a", Seq: 7, Action: "report-push-failed", Summons: tc.summons}}.Table(false)
		require.Equal(t, [][]string{{tc.want}}, rows, "summons %q", tc.summons)
	}
}
