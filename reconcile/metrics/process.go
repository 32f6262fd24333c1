package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sporectl/sporectl/reconcile"
)

// Buckets of the process's histograms, in seconds.
var (
	// A pass is milliseconds for a few spores, seconds for thousands
	// (bounded by the observe and ingest deadlines, 3 s and 10 s).
	passBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// A message is delivered at once to an idle spore, after its turn to
	// a working one, and by the next cron reconcile (minutes) or a wake
	// (a pod's start) to a sleeping one.
	deliveryBuckets = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}
)

// Process is serve's own counters (docs/metrics.md "Where each family
// appears"): what this process did since it started. They are not in
// the store, so they start at zero again when serve restarts, and each
// serve replica counts its own (sum them across replicas).
type Process struct {
	// Now is the clock a delivery's wait is measured on (default
	// time.Now): the one the store's send times were stamped with.
	Now func() time.Time

	reg          *prometheus.Registry
	sent         *prometheus.CounterVec
	refused      *prometheus.CounterVec
	delivered    *prometheus.CounterVec
	delivery     prometheus.Histogram
	breakerOpens *prometheus.CounterVec
	passes       *prometheus.HistogramVec
	passErrors   *prometheus.CounterVec
	model        modelFamilies // the model gateway's (gateway.go)
}

// NewProcess makes the process's counters, with the Go runtime's and the
// process's standard families (go_*, process_*) beside them.
func NewProcess() *Process {
	p := &Process{
		reg: prometheus.NewRegistry(),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_messages_sent_total",
			Help: "Messages this serve recorded for delivery, by route (summons, tell, swarm-tell); a repeated request is not counted again."},
			[]string{"route"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_messages_refused_total",
			Help: "Requests to send a message that this serve refused, by route and reason (the answer's error code)."},
			[]string{"route", "reason"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_messages_delivered_total",
			Help: "Messages and prompts the passes of this serve delivered to a bridge, by the colony of their target."},
			[]string{"colony"}),
		delivery: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sporectl_message_delivery_seconds",
			Help:    "Time from a message's send (its entry in the store) to its delivery by a pass of this serve.",
			Buckets: deliveryBuckets}),
		breakerOpens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_breaker_opens_total",
			Help: "Circuit breakers the passes of this serve opened (repeated crashes), by colony."},
			[]string{"colony"}),
		passes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sporectl_pass_duration_seconds",
			Help:    "Duration of the passes this serve ran, by kind: read (a scrape, the page, a message's look), deliver, heal (a wake) or reconcile.",
			Buckets: passBuckets}, []string{"kind"}),
		passErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sporectl_pass_errors_total",
			Help: "Passes of this serve that failed as a whole (the store), by kind."},
			[]string{"kind"}),
		model: newModelFamilies(),
	}
	p.reg.MustRegister(p.model.requests, p.model.tokens, p.model.upstream)
	p.reg.MustRegister(p.sent, p.refused, p.delivered, p.delivery, p.breakerOpens, p.passes, p.passErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

// Gatherer is what the process counted, for a scrape.
func (p *Process) Gatherer() prometheus.Gatherer { return p.reg }

// Sent and Refused count the message routes' answers
// (mycelia.MessageMetrics).
func (p *Process) Sent(route string)          { p.sent.WithLabelValues(route).Inc() }
func (p *Process) Refused(route, code string) { p.refused.WithLabelValues(route, code).Inc() }

// PassFinished counts a pass this process ran (reconcile.Pass.Finished):
// its duration by kind, and what it delivered and which breakers it
// opened.
func (p *Process) PassFinished(opt reconcile.Options, out *reconcile.Outcome, took time.Duration, err error) {
	kind := passKind(opt)
	p.passes.WithLabelValues(kind).Observe(took.Seconds())
	if err != nil {
		p.passErrors.WithLabelValues(kind).Inc()
	}
	if out == nil || opt.DryRun {
		return
	}
	now := p.now()
	for _, pl := range out.Plans {
		for _, d := range pl.Delivered {
			if d.Err != nil {
				continue
			}
			p.delivered.WithLabelValues(pl.Spore.Colony).Inc()
			p.delivery.Observe(max(now.Sub(d.Entry.At).Seconds(), 0))
		}
		if pl.OpenBreaker && out.ObserveErr == nil {
			p.breakerOpens.WithLabelValues(pl.Spore.Colony).Inc()
		}
	}
}

// passKind names what a pass was asked to do.
func passKind(opt reconcile.Options) string {
	switch {
	case opt.DryRun:
		return "dry_run"
	case opt.Heal && opt.Deliver:
		return "reconcile"
	case opt.Deliver:
		return "deliver"
	case opt.Heal:
		return "heal"
	}
	return "read"
}

func (p *Process) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
