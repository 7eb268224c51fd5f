package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sessiond/sessiond/gitstore/housekeeping"
	"github.com/sessiond/sessiond/session"
)

// metrics are the Prometheus series the daemon exports.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	overlayBytes prometheus.Counter
	checkpoint   prometheus.Histogram
	streams      prometheus.Gauge
}

func newMetrics(reg *prometheus.Registry, m *session.Manager) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	mt := &metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sessiond_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sessiond_http_request_duration_seconds", Help: "HTTP request latency by route and method.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		overlayBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sessiond_overlay_bytes_written_total", Help: "Bytes of file content written into session overlays over HTTP.",
		}),
		checkpoint: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sessiond_checkpoint_duration_seconds", Help: "Time to create a checkpoint (commit, refs and store row).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sessiond_event_streams", Help: "Open Server-Sent Events streams.",
		}),
	}
	live := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sessiond_live_sessions", Help: "Sessions in a non-terminal state (active or submitted).",
	}, func() float64 {
		if m == nil {
			return 0
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n := 0
		for _, st := range []session.State{session.StateActive, session.StateSubmitted} {
			ss, err := m.ListSessions(ctx, session.SessionFilter{State: st})
			if err != nil {
				return -1
			}
			n += len(ss)
		}
		return float64(n)
	})
	reg.MustRegister(mt.requests, mt.latency, mt.overlayBytes, mt.checkpoint, mt.streams, live,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The repositories' housekeeping, whatever opened them.
	reg.MustRegister(housekeeping.Collectors()...)
	return mt
}

func (mt *metrics) handler() http.Handler {
	return promhttp.HandlerFor(mt.reg, promhttp.HandlerOpts{})
}

// observe counts one request. Its labels take only values from a fixed
// set: the route's pattern and a standard method ("other" for any method
// a client made up), so no client adds series without end.
func (mt *metrics) observe(method, route string, status int, d time.Duration) {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
	default:
		method = "other"
	}
	mt.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	mt.latency.WithLabelValues(route, method).Observe(d.Seconds())
}
