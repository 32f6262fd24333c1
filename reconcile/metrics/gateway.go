package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sporectl/sporectl/state"
)

// upstreamBuckets are the model upstream's waits for an answer's
// headers, in seconds: a streamed answer's first event comes in about a
// second, a whole answer after the model wrote all of it (minutes).
var upstreamBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// modelFamilies are the model gateway's (mycelia/gateway.Metrics):
// counted in the process, as the other Process families, by colony and
// never by spore.
type modelFamilies struct {
	requests *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	upstream prometheus.Histogram
}

func newModelFamilies() modelFamilies {
	return modelFamilies{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_model_requests_total",
			Help: "Model calls the gateway of this serve answered, by the caller's colony (empty when it proved none) and the HTTP status code it was answered with (499: cut before an answer)."},
			[]string{"colony", "code"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_model_tokens_total",
			Help: "Tokens the gateway of this serve counted of model calls, by colony and kind (input, output, cache_creation, cache_read)."},
			[]string{"colony", "kind"}),
		upstream: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sporectl_model_upstream_seconds",
			Help:    "Time from a model call's forwarding by the gateway of this serve to the upstream's answer headers.",
			Buckets: upstreamBuckets}),
	}
}

// ModelRequest counts a call the gateway answered.
func (p *Process) ModelRequest(colony string, code int) {
	p.model.requests.WithLabelValues(colony, strconv.Itoa(code)).Inc()
}

// ModelTokens counts the tokens of usage the gateway counted.
func (p *Process) ModelTokens(colony string, u state.Usage) {
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_creation", u.CacheCreationTokens}, {"cache_read", u.CacheReadTokens}} {
		if k.n > 0 {
			p.model.tokens.WithLabelValues(colony, k.kind).Add(float64(k.n))
		}
	}
}

// ModelUpstream observes the upstream's wait for an answer's headers.
func (p *Process) ModelUpstream(took time.Duration) {
	p.model.upstream.Observe(max(took.Seconds(), 0))
}
