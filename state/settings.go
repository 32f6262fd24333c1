package state

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"time"
)

// Settings are store-wide: which runtime the colony uses and its defaults.
// Both backends keep them as one JSON document, so a new field needs no
// schema migration.
type Settings struct {
	Runtime      string `json:"runtime"`                 // "local" or "kube"
	Agent        string `json:"agent,omitempty"`         // a kind of bridge/agent: "claude" (default) or "echo"
	Namespace    string `json:"namespace,omitempty"`     // kube runtime
	StorageClass string `json:"storage_class,omitempty"` // kube runtime
	Image        string `json:"image,omitempty"`         // default spore image
	// APIURL is how spores reach `sporectl serve` (their SPORECTL_API_URL);
	// empty: the runtime's default (kube: the sporectl-api Service;
	// local: none).
	APIURL      string `json:"api_url,omitempty"`
	DefaultSpec Spec   `json:"default_spec"`
	// Recovery tunes crash recovery (DESIGN "Health"); zero fields mean
	// the defaults of RecoveryPolicy.WithDefaults. Stores refuse a policy
	// that fails Validate.
	Recovery RecoveryPolicy `json:"recovery,omitzero"`
	// Operators are the logins of the page that serve mounts at /ui/
	// (docs/security.md "Operator tokens"): a name and the hash of a token
	// each, never the token. Read and write them through OperatorTokens
	// and WithOperators. It is a pointer so that Settings stay comparable
	// with ==; nil means none.
	Operators *OperatorList `json:"operators,omitempty"`
	// Colonies are each colony's idle-sleep defaults (docs/sleep.md), by
	// colony name. Read and write them through Colony and WithColony; a
	// pointer for the same reason as Operators; nil means none.
	Colonies *ColonyList `json:"colonies,omitempty"`
	// AllowedSecrets are the Secrets a pod option may name, the operator's
	// allowlist (podsecrets.go). Read and write them through PodSecrets
	// and WithPodSecrets; a pointer for the same reason as Operators; nil
	// means none.
	AllowedSecrets *SecretList `json:"pod_secrets,omitempty"`
	// ModelGateway is how spores reach the model (docs/gateway.md):
	// GatewayOn (also "", the default) through serve's /model/ with
	// their own token, or GatewayOff, directly with the key in their
	// environment.
	ModelGateway string `json:"model_gateway,omitempty"`
	// ModelCallsPerMinute is how many model calls the gateway lets one
	// spore make per minute (0: DefaultModelCallsPerMinute).
	ModelCallsPerMinute int `json:"model_calls_per_minute,omitempty"`
}

// DefaultModelCallsPerMinute is a spore's limit of model calls through
// the gateway when the settings name none: Claude Code makes one call per
// step of a turn, seldom more than a few a second.
const DefaultModelCallsPerMinute = 120

// MaxModelCallsPerMinute bounds the setting.
const MaxModelCallsPerMinute = 100000

// Gateway reports whether spores reach the model through serve's gateway.
func (s Settings) Gateway() bool { return s.ModelGateway != GatewayOff }

// ModelCallRate is a spore's limit of model calls per minute.
func (s Settings) ModelCallRate() int {
	if s.ModelCallsPerMinute > 0 {
		return s.ModelCallsPerMinute
	}
	return DefaultModelCallsPerMinute
}

// OperatorToken is one operator's login to the page: only the token's
// hash is kept, with who it is for and when it was made.
type OperatorToken struct {
	Name string    `json:"name"`
	Hash TokenHash `json:"hash"`
	// Session is the hash of the key the token's logins prove their
	// sessions with (OperatorSessionKey), never the key itself.
	Session TokenHash `json:"session"`
	Created time.Time `json:"created"`
}

// OperatorList is the stored list of operator tokens, at most one per
// name, in the order they were created.
type OperatorList []OperatorToken

// MatchOperator finds the operator whose token was presented among ops
// (the page's login, serve's GET /metrics), comparing it with every
// stored hash in constant time (no early exit: how long it takes says
// nothing about which one matched, or how much of it did). An entry whose
// hash is not one (TokenHash.Valid) never matches.
func MatchOperator(ops []OperatorToken, token string) (OperatorToken, bool) {
	got := HashToken(token)
	var found OperatorToken
	hit := 0
	for _, op := range ops {
		eq := 0
		if len(op.Hash) == len(got) {
			eq = subtle.ConstantTimeCompare([]byte(op.Hash), []byte(got))
		}
		if eq == 1 && hit == 0 && op.Hash.Valid() {
			found, hit = op, 1
		}
	}
	return found, hit == 1
}

// MaxOperators bounds the operator tokens of a store: a login compares a
// presented token with every one of them.
const MaxOperators = 256

// OperatorTokens returns the store's operator tokens (nil: none).
func (s Settings) OperatorTokens() []OperatorToken {
	if s.Operators == nil {
		return nil
	}
	return *s.Operators
}

// WithOperators returns s with ops as its operator tokens; an empty list
// removes the key.
func (s Settings) WithOperators(ops []OperatorToken) Settings {
	if len(ops) == 0 {
		s.Operators = nil
		return s
	}
	l := OperatorList(append([]OperatorToken(nil), ops...))
	s.Operators = &l
	return s
}

// Validate checks what a store refuses to keep in its settings: the
// recovery policy (RecoveryPolicy.Validate), the default pod options
// (PodOptions.Validate, fields "default_spec.pod…"), the colonies'
// settings (ValidateColonies), the Secrets pods may name and that those
// pod options name only them (validatePodSecrets) and the operator tokens
// (ValidateOperators).
func (s Settings) Validate() error {
	if err := s.Recovery.Validate(); err != nil {
		return err
	}
	if err := s.DefaultSpec.Pod.Validate("default_spec.pod"); err != nil {
		return err
	}
	if s.Colonies != nil {
		if err := ValidateColonies(*s.Colonies); err != nil {
			return err
		}
	}
	if err := s.validatePodSecrets(); err != nil {
		return err
	}
	switch s.ModelGateway {
	case "", GatewayOn, GatewayOff:
	default:
		return &InvalidError{Field: "model_gateway", Value: preview(s.ModelGateway), Reason: "must be on or off"}
	}
	if s.ModelCallsPerMinute < 0 || s.ModelCallsPerMinute > MaxModelCallsPerMinute {
		return &InvalidError{Field: "model_calls_per_minute", Value: fmt.Sprint(s.ModelCallsPerMinute), Reason: fmt.Sprintf("must be 0 (the default, %d) to %d", DefaultModelCallsPerMinute, MaxModelCallsPerMinute)}
	}
	return ValidateOperators(s.OperatorTokens())
}

// ValidateOperators refuses a name outside the id grammar, a hash that is
// not one (TokenHash.Valid), a missing creation time, two tokens of one
// name and more than MaxOperators. The error is an *InvalidError whose
// Field is "operators" or "operators.NAME".
func ValidateOperators(ops []OperatorToken) error {
	if len(ops) > MaxOperators {
		return &InvalidError{Field: "operators", Value: fmt.Sprint(len(ops)), Reason: fmt.Sprintf("at most %d operator tokens are allowed", MaxOperators)}
	}
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if err := ValidateName("operator name", op.Name); err != nil {
			return err
		}
		field := "operators." + op.Name
		switch {
		case seen[op.Name]:
			return &InvalidError{Field: field, Value: op.Name, Reason: "is given twice"}
		case !op.Hash.Valid():
			// The value is never shown: it might be a token pasted by mistake.
			return &InvalidError{Field: field + ".hash", Value: "(not shown)", Reason: "must be 64 lowercase hex digits (a SHA-256)"}
		case !op.Session.Valid():
			return &InvalidError{Field: field + ".session", Value: "(not shown)", Reason: "must be 64 lowercase hex digits (a SHA-256)"}
		case op.Created.IsZero():
			return &InvalidError{Field: field + ".created", Value: "", Reason: "must be set"}
		}
		seen[op.Name] = true
	}
	return nil
}

// The ingest quota: how many bytes of agent lines a spore may have stored
// per UTC day (docs/bridge.md "An untrusted answer"). A spore's bridge is
// its agent's, so without it one spore could grow the store without end;
// over it the spore is Suspect (IngestQuota) and its bridge keeps what
// waits until the next day. A colony sets it (ColonySettings
// IngestQuotaMiB, `colony set --ingest-quota`); 0 is the default.
const (
	DefaultIngestQuotaMiB = 64
	// MaxIngestQuotaMiB (1 TiB a day) keeps the quota in bytes far from
	// overflow.
	MaxIngestQuotaMiB = 1 << 20
)

// IngestQuotaOf is sp's ingest quota in bytes per day: its colony's, else
// the default.
func IngestQuotaOf(sp Spore, s Settings) int64 {
	mib := s.Colony(sp.Colony).IngestQuotaMiB
	if mib <= 0 {
		mib = DefaultIngestQuotaMiB
	}
	return mib << 20
}

// ValidateIngestQuota refuses a quota below 0 (0: the default) or above
// MaxIngestQuotaMiB; field names the setting.
func ValidateIngestQuota(field string, mib int64) error {
	if mib < 0 || mib > MaxIngestQuotaMiB {
		return &InvalidError{Field: field, Value: fmt.Sprint(mib), Reason: fmt.Sprintf("must be 0 (the default, %d MiB) to %d MiB a day", DefaultIngestQuotaMiB, MaxIngestQuotaMiB)}
	}
	return nil
}

// Defaults of a spore's spec and of the storage class of its home. A new
// store takes them into its settings (init's flag defaults), so a spore
// gets them from there; the kube runtime falls back to them only for a
// field that both a spore's spec and its store leave empty.
const (
	DefaultCPU          = "2"
	DefaultMemory       = "3Gi"
	DefaultStorage      = "5Gi"
	DefaultStorageClass = "local-path"
)

// DefaultSpec is a new store's Settings.DefaultSpec. It names no image: a
// spore's image defaults to Settings.Image, then to the runtime's.
func DefaultSpec() Spec {
	return Spec{CPU: DefaultCPU, Memory: DefaultMemory, Storage: DefaultStorage}
}

// WithDefaults fills s's empty fields from the store's settings: the image
// from Image, the rest from DefaultSpec. create records the result, so a
// spore's spec is explicit and does not change when the store's defaults
// do. The pod options are the exception: s.Pod is kept as it is, and the
// runtime merges DefaultSpec.Pod under it when it makes a pod (MergePod).
func (s Spec) WithDefaults(st Settings) Spec {
	return s.Or(Spec{Image: st.Image, CPU: st.DefaultSpec.CPU, Memory: st.DefaultSpec.Memory, Storage: st.DefaultSpec.Storage})
}

// Or returns s with each empty field taken from d; s.Pod is s's (pod
// options are merged, not filled: MergePod).
func (s Spec) Or(d Spec) Spec {
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&s.Image, d.Image)
	fill(&s.CPU, d.CPU)
	fill(&s.Memory, d.Memory)
	fill(&s.Storage, d.Storage)
	return s
}

// RecoveryPolicy is how reconcile backs off a crashing spore and when it
// opens the circuit breaker. A zero field means its default; read the
// policy through WithDefaults.
type RecoveryPolicy struct {
	// BackoffInitial is the wait before the first respawn after a crash;
	// it doubles with every further crash, up to BackoffMax.
	BackoffInitial Duration `json:"backoff_initial,omitzero"`
	BackoffMax     Duration `json:"backoff_max,omitzero"`
	// BreakerFailures crashes inside BreakerWindow open the breaker: the
	// spore is not respawned until a person resets it.
	BreakerFailures int      `json:"breaker_failures,omitzero"`
	BreakerWindow   Duration `json:"breaker_window,omitzero"`
	// HealthyAfter is how long a spore must run without crashing before
	// its backoff and crash count start over.
	HealthyAfter Duration `json:"healthy_after,omitzero"`
}

// Defaults of RecoveryPolicy, used for every field left zero.
const (
	DefaultBackoffInitial  = 30 * time.Second
	DefaultBackoffMax      = 10 * time.Minute
	DefaultBreakerFailures = 5
	DefaultBreakerWindow   = 15 * time.Minute
	DefaultHealthyAfter    = 10 * time.Minute
)

// WithDefaults returns p with every zero field set to its default.
// Negative values are kept (Validate refuses them).
func (p RecoveryPolicy) WithDefaults() RecoveryPolicy {
	if p.BackoffInitial == 0 {
		p.BackoffInitial = Duration(DefaultBackoffInitial)
	}
	if p.BackoffMax == 0 {
		p.BackoffMax = Duration(DefaultBackoffMax)
	}
	if p.BreakerFailures == 0 {
		p.BreakerFailures = DefaultBreakerFailures
	}
	if p.BreakerWindow == 0 {
		p.BreakerWindow = Duration(DefaultBreakerWindow)
	}
	if p.HealthyAfter == 0 {
		p.HealthyAfter = Duration(DefaultHealthyAfter)
	}
	return p
}

// Validate refuses negative durations, a negative breaker count and a
// BackoffMax below BackoffInitial. The backoff bounds are compared as they
// take effect, with defaults filled in: setting only backoff_max to 10s is
// refused, since the initial backoff would then be 30s. The error is an
// *InvalidError whose Field names the setting ("recovery.backoff_max").
func (p RecoveryPolicy) Validate() error {
	for _, f := range []struct {
		name string
		v    Duration
	}{
		{"backoff_initial", p.BackoffInitial}, {"backoff_max", p.BackoffMax},
		{"breaker_window", p.BreakerWindow}, {"healthy_after", p.HealthyAfter},
	} {
		if f.v < 0 {
			return &InvalidError{Field: "recovery." + f.name, Value: f.v.String(), Reason: "must not be negative"}
		}
	}
	if p.BreakerFailures < 0 {
		return &InvalidError{Field: "recovery.breaker_failures", Value: fmt.Sprint(p.BreakerFailures), Reason: "must be at least 1 (0 means the default, 5)"}
	}
	eff := p.WithDefaults()
	if eff.BackoffMax < eff.BackoffInitial {
		return &InvalidError{Field: "recovery.backoff_max", Value: eff.BackoffMax.String(),
			Reason: fmt.Sprintf("must not be less than recovery.backoff_initial (%s)", eff.BackoffInitial)}
	}
	return nil
}

// Duration is a time.Duration kept in JSON as a Go duration string
// ("30s", "1h30m"), so a stored setting reads as what a person typed.
// Anything else in JSON (a number, null, a malformed string) is an error.
type Duration time.Duration

// String is the Go duration syntax, e.g. "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts only a JSON string that time.ParseDuration reads.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '"' {
		return fmt.Errorf("duration %s: want a string such as \"30s\" or \"10m\"", preview(string(b)))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s: %w", preview(string(b)), err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a Go duration such as \"30s\" or \"10m\"", preview(s))
	}
	*d = Duration(v)
	return nil
}

// preview keeps a value short inside an error message.
func preview(v string) string {
	const max = 64
	if len(v) <= max {
		return v
	}
	return v[:max] + "…"
}
