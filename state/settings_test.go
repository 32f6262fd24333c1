package state

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDurationJSON(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, 30 * time.Second, 90 * time.Minute, -5 * time.Second, 1500 * time.Millisecond} {
		b, err := json.Marshal(Duration(d))
		require.NoError(t, err)
		require.Equal(t, `"`+d.String()+`"`, string(b))
		var back Duration
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, Duration(d), back)
	}
	var d Duration
	require.NoError(t, json.Unmarshal([]byte(`"1h30m"`), &d))
	require.Equal(t, Duration(90*time.Minute), d)
	for _, bad := range []string{`30`, `null`, `""`, `"30"`, `"soon"`, `true`, `{"s":1}`, `["30s"]`} {
		d := Duration(7)
		err := json.Unmarshal([]byte(bad), &d)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "duration", bad)
		require.Contains(t, err.Error(), `"30s"`, "%s: the error shows the expected form", bad)
		require.Equal(t, Duration(7), d, "%s: a refused value changes nothing", bad)
	}
}

func TestSettingsRecoveryJSON(t *testing.T) {
	b, err := json.Marshal(Settings{Runtime: "local"})
	require.NoError(t, err)
	require.NotContains(t, string(b), "recovery", "the zero policy is omitted")
	st := Settings{Runtime: "local", Recovery: RecoveryPolicy{BackoffMax: Duration(time.Hour), BreakerFailures: 2}}
	b, err = json.Marshal(st)
	require.NoError(t, err)
	require.Contains(t, string(b), `"recovery":{"backoff_max":"1h0m0s","breaker_failures":2}`)
	var back Settings
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, st, back)
	err = json.Unmarshal([]byte(`{"runtime":"local","recovery":{"healthy_after":600}}`), &back)
	require.ErrorContains(t, err, "duration 600")
}

func TestRecoveryDefaults(t *testing.T) {
	require.Equal(t, RecoveryPolicy{
		BackoffInitial: Duration(30 * time.Second), BackoffMax: Duration(10 * time.Minute), BreakerFailures: 5,
		BreakerWindow: Duration(15 * time.Minute), HealthyAfter: Duration(10 * time.Minute),
	}, RecoveryPolicy{}.WithDefaults())
	set := RecoveryPolicy{BackoffInitial: Duration(time.Second), BackoffMax: Duration(time.Minute), BreakerFailures: 1,
		BreakerWindow: Duration(time.Hour), HealthyAfter: Duration(time.Millisecond)}
	require.Equal(t, set, set.WithDefaults(), "set fields are kept")
	require.Equal(t, Duration(-time.Second), RecoveryPolicy{BackoffInitial: Duration(-time.Second)}.WithDefaults().BackoffInitial)
	require.NoError(t, RecoveryPolicy{}.Validate())
	require.NoError(t, set.Validate())
}

func TestRecoveryValidate(t *testing.T) {
	for _, tc := range []struct {
		p     RecoveryPolicy
		field string
	}{
		{RecoveryPolicy{BackoffInitial: Duration(-1)}, "recovery.backoff_initial"},
		{RecoveryPolicy{BackoffMax: Duration(-time.Second)}, "recovery.backoff_max"},
		{RecoveryPolicy{BreakerWindow: Duration(-time.Minute)}, "recovery.breaker_window"},
		{RecoveryPolicy{HealthyAfter: Duration(-time.Hour)}, "recovery.healthy_after"},
		{RecoveryPolicy{BreakerFailures: -1}, "recovery.breaker_failures"},
		{RecoveryPolicy{BackoffInitial: Duration(time.Minute), BackoffMax: Duration(time.Second)}, "recovery.backoff_max"},
		// Compared with the default initial backoff (30s).
		{RecoveryPolicy{BackoffMax: Duration(10 * time.Second)}, "recovery.backoff_max"},
		// And with the default maximum (10m).
		{RecoveryPolicy{BackoffInitial: Duration(time.Hour)}, "recovery.backoff_max"},
	} {
		err := tc.p.Validate()
		var inv *InvalidError
		require.True(t, errors.As(err, &inv), "%+v: %v", tc.p, err)
		require.Equal(t, tc.field, inv.Field, "%+v", tc.p)
	}
	require.NoError(t, RecoveryPolicy{BackoffInitial: Duration(time.Minute), BackoffMax: Duration(time.Minute)}.Validate())
}

func TestSporeHealthValidate(t *testing.T) {
	ok := Spore{Wish: Wish{ID: "a", Colony: "c", Rank: RankSpore, Desired: Paused, Generation: 1 << 62}, Status: Status{HealthRecord: HealthRecord{Health: "Dead", HealthReason: "OOMKilled"}}}
	require.NoError(t, ok.Validate())
	for name, mutate := range map[string]func(*Spore){
		"newline":    func(s *Spore) { s.Health = "a\nb" },
		"nul":        func(s *Spore) { s.HealthReason = "a\x00" },
		"not utf-8":  func(s *Spore) { s.HealthReason = "\xc3" },
		"too long":   func(s *Spore) { s.HealthReason = string(make([]byte, MaxHealthLen+1)) },
		"long name":  func(s *Spore) { s.Health = Health("D" + strings.Repeat("e", MaxHealthName)) },
		"lower case": func(s *Spore) { s.Health = "dead" },
		"digit":      func(s *Spore) { s.Health = "Dead2" },
		"generation": func(s *Spore) { s.Generation = 1 << 63 },
		"observed":   func(s *Spore) { s.ObservedGeneration = s.Generation + 1 },
	} {
		s := ok
		mutate(&s)
		var inv *InvalidError
		require.ErrorAs(t, s.Validate(), &inv, name)
	}
}

func TestSettingsOperators(t *testing.T) {
	tok, hash, err := NewOperatorToken()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok, OperatorTokenPrefix))
	require.GreaterOrEqual(t, len(tok)-len(OperatorTokenPrefix), 43, "256 bits, base64")
	require.True(t, hash.Valid())
	require.True(t, hash.Matches(tok))
	tok2, _, err := NewOperatorToken()
	require.NoError(t, err)
	require.NotEqual(t, tok, tok2)

	created := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	sess := SessionHash(OperatorSessionKey(tok))
	require.True(t, sess.Valid())
	require.NotEqual(t, hash, sess)
	s := Settings{Runtime: "local"}.WithOperators([]OperatorToken{{Name: "alice", Hash: hash, Session: sess, Created: created}})
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(b), `"operators":[{"name":"alice","hash":"`+string(hash)+`","session":"`+string(sess)+`","created":"2026-12-01T09:00:00Z"}]`)
	require.NotContains(t, string(b), tok)
	var back Settings
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, s.OperatorTokens(), back.OperatorTokens())
	require.NoError(t, back.Validate())

	// None: the key is absent, and Settings stay comparable.
	none := back.WithOperators(nil)
	require.Nil(t, none.Operators)
	b, err = json.Marshal(none)
	require.NoError(t, err)
	require.NotContains(t, string(b), "operators")
	require.True(t, none == Settings{Runtime: "local"})

	for _, tc := range []struct {
		name  string
		ops   []OperatorToken
		field string
	}{
		{"bad name", []OperatorToken{{Name: "Alice!", Hash: hash, Session: sess, Created: created}}, "operator name"},
		{"empty name", []OperatorToken{{Name: "", Hash: hash, Session: sess, Created: created}}, "operator name"},
		{"twice", []OperatorToken{{Name: "a", Hash: hash, Session: sess, Created: created}, {Name: "a", Hash: hash, Session: sess, Created: created}}, "operators.a"},
		{"plaintext as hash", []OperatorToken{{Name: "a", Hash: TokenHash(tok), Session: sess, Created: created}}, "operators.a.hash"},
		{"no session hash", []OperatorToken{{Name: "a", Hash: hash, Created: created}}, "operators.a.session"},
		{"no time", []OperatorToken{{Name: "a", Hash: hash, Session: sess}}, "operators.a.created"},
	} {
		err := Settings{}.WithOperators(tc.ops).Validate()
		var inv *InvalidError
		require.True(t, errors.As(err, &inv), "%s: %v", tc.name, err)
		require.Equal(t, tc.field, inv.Field, tc.name)
		require.NotContains(t, err.Error(), tok, "a token is never echoed")
	}
	many := make([]OperatorToken, MaxOperators+1)
	for i := range many {
		many[i] = OperatorToken{Name: "op" + strconv.Itoa(i), Hash: hash, Session: sess, Created: created}
	}
	require.Error(t, ValidateOperators(many))
	require.NoError(t, ValidateOperators(many[:MaxOperators]))
	require.Error(t, Settings{Recovery: RecoveryPolicy{BreakerFailures: -1}}.Validate(), "recovery is validated too")
}
