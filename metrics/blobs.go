package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/docket/docket/blobstore"
)

// WatchBlobs adds the blob store's journal counts (blobstore/journal.go),
// read at scrape time. A store without a journal (S3) adds nothing.
func (m *Metrics) WatchBlobs(s blobstore.Store) {
	j, ok := s.(interface{ JournalStats() blobstore.JournalStats })
	if m == nil || !ok {
		return
	}
	counter := func(name, help string, v func(blobstore.JournalStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help},
			func() float64 { return float64(v(j.JournalStats())) })
	}
	flag := func(name, help string, v func(blobstore.JournalStats) bool) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help},
			func() float64 {
				if v(j.JournalStats()) {
					return 1
				}
				return 0
			})
	}
	m.reg.MustRegister(
		counter("blob_journal_records_total", "Uploads the blob store made durable through its journal.",
			func(s blobstore.JournalStats) uint64 { return s.Records }),
		counter("blob_journal_syncs_total", "fdatasyncs of the blob store's journal; records per sync is how many uploads shared one.",
			func(s blobstore.JournalStats) uint64 { return s.Syncs }),
		counter("blob_journal_checkpoints_total", "Full journal segments whose blobs the store made durable on their own before reusing them.",
			func(s blobstore.JournalStats) uint64 { return s.Checkpoints }),
		flag("blob_journal_failed", "1 once the blob store's journal failed (a sync, a checkpoint, or its segment removed from under the store): every upload since fsyncs its own file and directory, until the node restarts.",
			func(s blobstore.JournalStats) bool { return s.Failed }),
		flag("blob_journal_rescue_failed", "1 if making a removed journal's blobs durable on their own failed: a machine crash may then lose the bytes of documents stored before the removal.",
			func(s blobstore.JournalStats) bool { return s.RescueFailed }),
	)
}
