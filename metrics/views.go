package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

// scrapeTimeout bounds the broker calls of one scrape, so a dead broker
// makes /metrics report docket_broker_up 0 instead of hanging.
const scrapeTimeout = 5 * time.Second

var (
	lagDesc = prometheus.NewDesc(Namespace+"_projection_lag",
		"Events in the log not yet applied to this node's views, by projection and partition. "+
			"Every projection is applied in one loop with one offset per partition, so projection is always \"views\".",
		[]string{"projection", "partition"}, nil)
	queueDesc = prometheus.NewDesc(Namespace+"_work_queue_depth",
		"Work items on the work topic not yet committed by the worker group, by partition.",
		[]string{"partition"}, nil)
	docsDesc = prometheus.NewDesc(Namespace+"_documents",
		"Documents in each internal status (uploaded, queued, preprocessing, preprocessed, extracting, succeeded, failed, canceled), over every org.",
		[]string{"status"}, nil)
	brokerDesc = prometheus.NewDesc(Namespace+"_broker_up",
		"1 if this scrape could list the log's end offsets, else 0.", nil, nil)
	memDesc = prometheus.NewDesc(Namespace+"_views_memory_bytes",
		"What this node's views hold in memory, by part: Pebble's block_cache (fills up to its size as views are read), "+
			"its memtables, and the key_filter of every key the views hold (about 1.5 bytes a key).",
		[]string{"part"}, nil)
)

// Watch adds the series read at scrape time from the node's views and
// broker, and lets Applied look documents up. Call it before the views run.
// views may be nil (a worker-only node): then only the broker and the work
// queue are reported.
func (m *Metrics) Watch(views *projections.Views, store *eventstore.Store) {
	if views != nil {
		m.views.Store(views)
	}
	m.reg.MustRegister(&viewCollector{views: views, store: store})
}

// Applied is a projections.OnApplied listener: it counts applied events and
// observes the end-to-end latency of runs that ended. Runs that ended
// before this node started are skipped, so catching up after a restart
// does not replay old latencies.
func (m *Metrics) Applied(recs []eventstore.Record) {
	if m == nil {
		return
	}
	v := m.views.Load()
	for _, rec := range recs {
		if rec.Event == nil {
			continue
		}
		m.applied.WithLabelValues(rec.Event.Type()).Inc()
		if endedAs(rec.Event) == "" || v == nil || rec.Event.Header().OccurredAt.Before(m.started) {
			continue
		}
		d, err := v.Document(rec.Event.Header().OrgID, domain.DocumentIDOf(rec.Event))
		// The view is read after the whole fetch: count the run once, at the
		// event that gave the document the status it has now.
		if err != nil || d.Status != endedAs(rec.Event) || d.CompletedAt.IsZero() {
			continue
		}
		from := d.CreatedAt
		if d.Attempt > 1 && !d.QueuedAt.IsZero() {
			from = d.QueuedAt
		}
		m.endToEnd.WithLabelValues(string(d.Status)).Observe(d.CompletedAt.Sub(from).Seconds())
	}
}

// endedAs is the status a run-ending event leaves a document in.
func endedAs(e domain.Event) domain.Status {
	switch e.(type) {
	case *domain.DocumentSucceeded:
		return domain.StatusSucceeded
	case *domain.DocumentFailed:
		return domain.StatusFailed
	case *domain.DocumentCanceled:
		return domain.StatusCanceled
	case *domain.DocumentPreprocessed:
		return domain.StatusPreprocessed
	}
	return ""
}

type viewCollector struct {
	views *projections.Views
	store *eventstore.Store
}

func (c *viewCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- queueDesc
	ch <- docsDesc
	ch <- brokerDesc
	ch <- memDesc
}

func (c *viewCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	up := 0.0
	if end, err := c.store.EndOffsets(ctx); err == nil {
		up = 1
		for p, lag := range c.lag(end) {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(lag), "views", strconv.Itoa(int(p)))
		}
	}
	ch <- prometheus.MustNewConstMetric(brokerDesc, prometheus.GaugeValue, up)
	if up == 1 {
		if depth, err := WorkQueueDepth(ctx, c.store); err == nil {
			for p, n := range depth {
				ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), strconv.Itoa(int(p)))
			}
		}
	}
	if c.views == nil {
		return
	}
	m := c.views.Memory()
	for part, n := range map[string]int64{"block_cache": m.BlockCache, "memtables": m.MemTables, "key_filter": m.KeyFilter} {
		ch <- prometheus.MustNewConstMetric(memDesc, prometheus.GaugeValue, float64(n), part)
	}
	if counts, err := c.views.DocumentsByStatus(); err == nil {
		for s, n := range counts {
			ch <- prometheus.MustNewConstMetric(docsDesc, prometheus.GaugeValue, float64(n), string(s))
		}
	}
}

func (c *viewCollector) lag(end map[int32]int64) map[int32]int64 {
	if c.views == nil {
		return nil
	}
	return c.views.Lag(end)
}

// WorkQueueDepth is, per work-topic partition, how many items the worker
// group has not committed yet: queued plus in flight.
func WorkQueueDepth(ctx context.Context, store *eventstore.Store) (map[int32]int64, error) {
	adm := kadm.NewClient(store.Client())
	end, err := adm.ListEndOffsets(ctx, store.WorkTopic())
	if err != nil {
		return nil, err
	}
	committed, err := adm.FetchOffsets(ctx, store.GroupName("workers"))
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	end.Each(func(o kadm.ListedOffset) {
		var at int64
		if c, ok := committed.Lookup(o.Topic, o.Partition); ok && c.At > 0 {
			at = c.At
		}
		out[o.Partition] = max(o.Offset-at, 0)
	})
	return out, nil
}
