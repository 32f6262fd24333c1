package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sporectl/sporectl/reconcile"
)

// A reconcile run's families: what one cron run did, as gauges of that
// run (the textfile's; a run keeps no counter from the run before, so a
// counter would start again at every run).
var (
	descRunDuration = prometheus.NewDesc("sporectl_reconcile_duration_seconds",
		"How long the last reconcile run's pass took.", nil, nil)
	descRunTime = prometheus.NewDesc("sporectl_reconcile_timestamp_seconds",
		"When the last reconcile run finished, in seconds since the Unix epoch (alert on its age: a run that fails writes no file).", nil, nil)
	descRunDelivered = prometheus.NewDesc("sporectl_reconcile_delivered_messages",
		"Messages the last reconcile run delivered, by the colony of their target.", []string{"colony"}, nil)
	descRunBreakers = prometheus.NewDesc("sporectl_reconcile_breaker_opens",
		"Circuit breakers the last reconcile run opened (repeated crashes), by colony.", []string{"colony"}, nil)
)

type run struct{ metrics []prometheus.Metric }

func (r run) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunDuration, descRunTime, descRunDelivered, descRunBreakers} {
		ch <- d
	}
}

func (r run) Collect(ch chan<- prometheus.Metric) {
	for _, m := range r.metrics {
		ch <- m
	}
}

// Run is the families of one reconcile run: its outcome, how long its
// pass took and when it finished. Every colony of the run's spores has a
// series of each (zeros included).
func Run(out *reconcile.Outcome, took time.Duration, finished time.Time) prometheus.Collector {
	delivered, opened := map[string]int{}, map[string]int{}
	for _, p := range out.Plans {
		c := p.Spore.Colony
		delivered[c] += 0
		opened[c] += 0
		for _, d := range p.Delivered {
			if d.Err == nil {
				delivered[c]++
			}
		}
		if p.OpenBreaker {
			opened[c]++
		}
	}
	r := run{}
	add := func(d *prometheus.Desc, v float64, labels ...string) {
		r.metrics = append(r.metrics, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	add(descRunDuration, took.Seconds())
	add(descRunTime, float64(finished.UnixMilli())/1e3)
	for c, n := range delivered {
		add(descRunDelivered, float64(n), c)
		add(descRunBreakers, float64(opened[c]), c)
	}
	return r
}
