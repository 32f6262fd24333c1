package state

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestColonySettingsJSON(t *testing.T) {
	b, err := json.Marshal(Settings{Runtime: "local"})
	require.NoError(t, err)
	require.NotContains(t, string(b), "colonies", "none: no key")
	s := Settings{Runtime: "local"}.WithColony("lab", ColonySettings{SleepAfter: Duration(30 * time.Minute), WakeOnMessage: true})
	b, err = json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(b), `"colonies":{"lab":{"sleep_after":"30m0s","wake_on_message":true}}`)
	var back Settings
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, s.Colony("lab"), back.Colony("lab"))
	require.Equal(t, ColonySettings{}, Settings{}.Colony("lab"))

	before := s
	_ = s.WithColony("lab", ColonySettings{})
	require.Equal(t, ColonySettings{SleepAfter: Duration(30 * time.Minute), WakeOnMessage: true}, before.Colony("lab"), "WithColony does not change what it was called on")
}

func TestWishSleepRules(t *testing.T) {
	ok := Wish{ID: "a", Colony: "lab", Rank: RankSpore, Desired: Paused, SleepAfter: Duration(time.Hour), DesiredBy: ByIdle}
	require.NoError(t, ok.Validate())
	for name, w := range map[string]Wish{
		"idle while running": {ID: "a", Colony: "lab", Rank: RankSpore, Desired: Running, DesiredBy: ByIdle},
		"unknown desired by": {ID: "a", Colony: "lab", Rank: RankSpore, Desired: Paused, DesiredBy: "moon"},
		"too short":          {ID: "a", Colony: "lab", Rank: RankSpore, Desired: Paused, SleepAfter: Duration(time.Second)},
	} {
		var inv *InvalidError
		require.ErrorAs(t, w.Validate(), &inv, name)
	}
}
