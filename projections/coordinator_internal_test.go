package projections

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// coordEnv is one embedded broker, a store on a topic of its own, views
// that apply only when told to (catchUp), and a dispatcher whose
// coordinate the tests call directly: the views lag behind the log
// exactly as far as the test says.
type coordEnv struct {
	t     *testing.T
	ctx   context.Context
	store *eventstore.Store
	views *Views
	d     *Dispatcher
}

func setupCoordinator(t *testing.T) *coordEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	broker, err := eventstore.StartEmbedded(t.TempDir(), "127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	store, err := eventstore.Open(ctx, []string{broker.Addr()}, eventstore.Prefix(fmt.Sprintf("coord-%d", time.Now().UnixNano())), eventstore.Partitions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	v, err := open(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Close(); err != nil {
			t.Errorf("close views: %v", err)
		}
	})
	return &coordEnv{t: t, ctx: ctx, store: store, views: v, d: &Dispatcher{Store: store, Views: v, Log: zerolog.Nop()}}
}

// appendEvents appends events of org o1 without applying them.
func (e *coordEnv) appendEvents(events ...domain.Event) {
	e.t.Helper()
	if _, err := e.store.Append(e.ctx, events...); err != nil {
		e.t.Fatal(err)
	}
}

// catchUp applies the whole log to the views and returns the records it
// applied.
func (e *coordEnv) catchUp() []eventstore.Record {
	e.t.Helper()
	from := e.views.Offsets()[0]
	end, err := e.store.EndOffsets(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	recs := e.read(from, end[0])
	if err := e.views.ApplyRecords(recs); err != nil {
		e.t.Fatal(err)
	}
	return recs
}

// read returns the records of offsets [from, to).
func (e *coordEnv) read(from, to int64) []eventstore.Record {
	e.t.Helper()
	r, err := e.store.NewReader(map[int32]int64{0: from})
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	var recs []eventstore.Record
	for int64(len(recs)) < to-from {
		got, err := r.Poll(e.ctx, int(to-from)-len(recs))
		if err != nil {
			e.t.Fatal(err)
		}
		recs = append(recs, got...)
	}
	return recs
}

// outcomes lists the job outcomes in the whole log, as type/id.
func (e *coordEnv) outcomes() []string {
	e.t.Helper()
	end, err := e.store.EndOffsets(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, rec := range e.read(0, end[0]) {
		switch rec.Event.(type) {
		case *domain.JobCompleted, *domain.JobCancelled:
			out = append(out, rec.Event.Type()+"/"+rec.Event.Header().EventID)
		}
	}
	return out
}

func (e *coordEnv) coordinate(recs []eventstore.Record) {
	e.t.Helper()
	e.d.running.Lock() // as dispatch holds it around coordinate
	defer e.d.running.Unlock()
	if err := e.d.coordinate(e.ctx, recs); err != nil {
		e.t.Fatal(err)
	}
}

// finishedJob is a preprocess job of one document whose run has ended:
// every row is terminal, and the job has no outcome yet.
func finishedJob() []domain.Event {
	m := func() domain.Meta { return eventstore.NewMeta("o1", "test", "") }
	return []domain.Event{
		&domain.DocumentUploaded{Meta: m(), DocumentID: "d1", FileName: "a.pdf", ContentType: "application/pdf", Size: 100, BlobKey: "k1"},
		&domain.JobCreated{Meta: m(), JobID: "job1", Kind: domain.JobPreprocess, DocumentIDs: []string{"d1"}},
		&domain.DocumentQueued{Meta: m(), DocumentID: "d1", Phase: domain.PhasePreprocess, Attempt: 1, JobIDs: []string{"job1"}},
		&domain.ProcessingStarted{Meta: m(), DocumentID: "d1", Phase: domain.PhasePreprocess, Attempt: 1, ClaimID: "c1", Worker: "w1"},
		&domain.DocumentPreprocessed{Meta: m(), DocumentID: "d1", ClaimID: "c1", ContentType: "application/pdf", Pages: 1, TextChars: 10},
	}
}

// TestCoordinatorAppendsAnOutcomeOnce: two runs that see a finished job
// before the views apply its outcome append that outcome once.
func TestCoordinatorAppendsAnOutcomeOnce(t *testing.T) {
	t.Parallel()
	e := setupCoordinator(t)
	e.appendEvents(finishedJob()...)
	recs := e.catchUp()
	e.coordinate(recs)
	e.coordinate(recs) // the views have not applied the outcome yet
	want := "JobCompleted/evt_outcome_job1_0"
	if got := e.outcomes(); len(got) != 1 || got[0] != want {
		t.Fatalf("outcomes in the log: %v, want [%s]", got, want)
	}
	e.catchUp()
	if j, err := e.views.Job("o1", "job1"); err != nil || j.Final != domain.JobStatusCompleted {
		t.Fatalf("job after the outcome: %+v, %v", j, err)
	}
	e.coordinate(recs) // applied: the job has its outcome, nothing to add
	if got := e.outcomes(); len(got) != 1 {
		t.Fatalf("outcomes in the log after the views applied it: %v", got)
	}
}

// TestCoordinatorAppendsTheOutcomeThatReplacesARefusedOne: a cancel
// request that reached the log before the coordinator's JobCompleted makes
// the fold refuse it; once the views apply both, the JobCancelled that
// follows under the same id is appended, not skipped as a duplicate.
func TestCoordinatorAppendsTheOutcomeThatReplacesARefusedOne(t *testing.T) {
	t.Parallel()
	e := setupCoordinator(t)
	e.appendEvents(finishedJob()...)
	recs := e.catchUp()
	e.appendEvents(&domain.JobCancelRequested{Meta: eventstore.NewMeta("o1", "test", ""), JobID: "job1"})
	e.coordinate(recs) // the views do not know of the request yet
	e.coordinate(e.catchUp())
	want := []string{"JobCompleted/evt_outcome_job1_0", "JobCancelled/evt_outcome_job1_0"}
	if got := e.outcomes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes in the log: %v, want %v", got, want)
	}
	e.catchUp()
	if j, err := e.views.Job("o1", "job1"); err != nil || j.Final != domain.JobStatusCancelled {
		t.Fatalf("job after the outcomes: %+v, %v", j, err)
	}
}
