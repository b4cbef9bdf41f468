package server

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ragmem/ragmem/rag"
)

// metrics are the server's Prometheus metrics, in their own registry.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

func newMetrics(p *pool) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ragmem_http_requests_total",
		Help: "HTTP requests answered, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ragmem_http_request_duration_seconds",
		Help:    "Time to answer HTTP requests, by route pattern and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ragmem_http_errors_total",
		Help: "Error responses, by route pattern and error code.",
	}, []string{"route", "code"})
	m.reg.MustRegister(m.requests, m.latency, m.errors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ragmem_index_queue_depth",
			Help: "Pages waiting in the background indexing queues of the open namespaces.",
		}, func() float64 { return float64(p.queueTotals().Depth) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ragmem_index_jobs_failed_total",
			Help: "Background indexing jobs that failed, including pages dropped because a queue was full.",
		}, func() float64 { q := p.queueTotals(); return float64(q.Failed + q.Dropped) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "ragmem_index_jobs_done_total",
			Help: "Background indexing jobs finished, including those that found the content unchanged.",
		}, func() float64 { return float64(p.queueTotals().Done) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "ragmem_namespaces_open",
			Help: "Namespaces whose store is open.",
		}, func() float64 { return float64(p.openCount()) }),
		&chunkCollector{p: p, desc: prometheus.NewDesc("ragmem_index_chunks",
			"Chunks stored in the open namespaces (knowledge, preferences and memories).", nil, nil)},
	)
	return m
}

func (m *metrics) observe(route, method string, status int, errCode string, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
	if errCode != "" {
		m.errors.WithLabelValues(route, errCode).Inc()
	}
}

// chunkCollector reads the chunk counts when scraped.
type chunkCollector struct {
	p    *pool
	desc *prometheus.Desc
}

func (c *chunkCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *chunkCollector) Collect(ch chan<- prometheus.Metric) {
	total := 0
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.p.each(func(_ string, eng *rag.Engine) {
		if n, err := eng.Chunks(ctx); err == nil {
			total += n
		}
	})
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(total))
}
