package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

type readyBody struct {
	Status  string           `json:"status"`
	Reasons []string         `json:"reasons"`
	Broker  string           `json:"broker"`
	Applied map[string]int64 `json:"applied"`
	End     map[string]int64 `json:"end"`
	Lag     map[string]int64 `json:"lag"`
	MaxLag  int64            `json:"max_lag"`
}

func getReady(t *testing.T, h http.Handler) (int, readyBody) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var b readyBody
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("readyz body %q: %v", rec.Body, err)
	}
	return rec.Code, b
}

// TestReadyzFollowsLagAndBroker runs /readyz over a real embedded broker
// and real (stopped) views: events the views have not applied count as lag,
// past ReadyMaxLag the node is not ready, and once the views apply them it
// is; with the broker gone it is not ready either, and says why.
func TestReadyzFollowsLagAndBroker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broker, err := eventstore.StartEmbedded(filepath.Join(dir, "kafka"), "127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := eventstore.Open(ctx, []string{broker.Addr()}, eventstore.Prefix("ready"), eventstore.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	views, err := projections.Open(filepath.Join(dir, "views"))
	if err != nil {
		t.Fatal(err)
	}
	defer views.Close()
	srv, err := New(Config{ReadyMaxLag: 2}, views, store, nil, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()

	if code, b := getReady(t, h); code != http.StatusOK || b.Broker != "ok" || len(b.Lag) != 2 || b.MaxLag != 2 {
		t.Fatalf("empty log: %d %+v", code, b)
	}
	var events []domain.Event
	for range 3 {
		events = append(events, &domain.OrgCreated{Meta: eventstore.NewMeta("org_ready", "test", ""), Name: "ready"})
	}
	pos, err := store.Append(ctx, events...)
	if err != nil {
		t.Fatal(err)
	}
	p := pos[0].Partition
	key := string(rune('0' + p))
	code, b := getReady(t, h)
	if code != http.StatusServiceUnavailable || b.Status != "not_ready" || b.Lag[key] != 3 || b.End[key] != 3 ||
		len(b.Reasons) != 1 || !strings.Contains(b.Reasons[0], "3 events behind on partition "+key) {
		t.Fatalf("3 unapplied events, limit 2: %d %+v", code, b)
	}

	// Apply them: ready again, with no lag.
	recs, err := func() ([]eventstore.Record, error) {
		r, err := store.NewReader(map[int32]int64{p: 0})
		if err != nil {
			return nil, err
		}
		defer r.Close()
		var out []eventstore.Record
		for len(out) < 3 {
			got, err := r.Poll(ctx, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
		}
		return out, nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	if err := views.ApplyRecords(recs); err != nil {
		t.Fatal(err)
	}
	if code, b := getReady(t, h); code != http.StatusOK || b.Lag[key] != 0 || b.Applied[key] != 3 {
		t.Fatalf("after applying: %d %+v", code, b)
	}

	broker.Close()
	code, b = getReady(t, h)
	if code != http.StatusServiceUnavailable || b.Broker != "unreachable" || len(b.Reasons) == 0 || !strings.HasPrefix(b.Reasons[0], "broker unreachable") {
		t.Fatalf("broker gone: %d %+v", code, b)
	}
}
