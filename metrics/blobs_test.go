package metrics_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/metrics"
)

// journalFailed reads docket_blob_journal_failed from the registry.
func journalFailed(t *testing.T, m *metrics.Metrics) (failed, rescueFailed float64) {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range families {
		switch f.GetName() {
		case "docket_blob_journal_failed":
			failed = f.GetMetric()[0].GetGauge().GetValue()
			found++
		case "docket_blob_journal_rescue_failed":
			rescueFailed = f.GetMetric()[0].GetGauge().GetValue()
			found++
		}
	}
	if found != 2 {
		t.Fatalf("%d of the journal's two gauges registered", found)
	}
	return failed, rescueFailed
}

// The journal's failure shows on /metrics: 0 while it works, 1 once its
// segment was removed from under the store (the watch notices without an
// upload), and the rescue that followed did not fail.
func TestBlobJournalFailureIsAGauge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := blobstore.NewFS(dir, blobstore.JournalWatch(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := metrics.New()
	m.WatchBlobs(s)
	if _, err := s.Put(context.Background(), bytes.NewReader([]byte("an invoice"))); err != nil {
		t.Fatal(err)
	}
	if failed, rescue := journalFailed(t, m); failed != 0 || rescue != 0 {
		t.Fatalf("a working journal: failed %v, rescue failed %v", failed, rescue)
	}
	if err := os.RemoveAll(filepath.Join(dir, "tmp")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !s.JournalStats().Rescued; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no rescue 30 s after the removal: %+v", s.JournalStats())
		}
	}
	if failed, rescue := journalFailed(t, m); failed != 1 || rescue != 0 {
		t.Fatalf("after the removal: failed %v, rescue failed %v; want 1 and 0", failed, rescue)
	}
}
