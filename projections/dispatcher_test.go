package projections_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/metrics"
	"github.com/docket/docket/projections"
)

// dutyPartitions is the partition count of the dispatcher tests' topics.
const dutyPartitions = 4

// dutyEnv is an embedded broker, a store and live views, for running
// dispatchers against.
type dutyEnv struct {
	t       *testing.T
	ctx     context.Context
	seeds   []string
	store   *eventstore.Store
	views   *projections.Views
	work    *workWatch
	dropped atomic.Bool // the views dropped a slow subscriber
}

func newDutyEnv(t *testing.T) *dutyEnv {
	t.Helper()
	e := &dutyEnv{t: t}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	e.ctx = ctx
	broker, err := eventstore.StartEmbedded(t.TempDir(), "127.0.0.1:0", dutyPartitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	e.seeds = []string{broker.Addr()}
	e.store, err = eventstore.Open(ctx, e.seeds, eventstore.Prefix("duties-test"), eventstore.Partitions(dutyPartitions))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.store.Close)
	// The views say at debug level when they drop a subscriber.
	log := zerolog.New(logWatch{func(line string) {
		if strings.Contains(line, "slow subscriber dropped") {
			e.dropped.Store(true)
		}
	}}).Level(zerolog.DebugLevel)
	e.views = setup(t, projections.WithLogger(log)).v
	runViews(t, e.views, e.store)
	e.work = watchWork(t, e.seeds, e.store.WorkTopic())
	return e
}

// runViews applies store's log to v in the background until the test ends.
func runViews(t *testing.T, v *projections.Views, store *eventstore.Store) {
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(runCtx, store, nil) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("views: %v", err)
		}
	})
}

// logWatch passes every log line to fn.
type logWatch struct{ fn func(string) }

func (w logWatch) Write(p []byte) (int, error) {
	w.fn(string(p))
	return len(p), nil
}

// orgs returns one org for each partition, in partition order.
func (e *dutyEnv) orgs() []string {
	out := make([]string, dutyPartitions)
	for i, n := 0, 0; n < dutyPartitions; i++ {
		org := fmt.Sprintf("org_%d", i)
		if p := e.store.PartitionFor(org); out[p] == "" {
			out[p] = org
			n++
		}
	}
	return out
}

// queue appends an uploaded and queued document, waits until the views
// show it queued, and returns the work item id it should be dispatched as.
func (e *dutyEnv) queue(org, doc string) string {
	e.t.Helper()
	events, id := queued(org, doc)
	pos, err := e.store.Append(e.ctx, events...)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.views.WaitAll(e.ctx, pos); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// queued is the events of a document uploaded and queued, and the id of
// the work item it should be dispatched as.
func queued(org, doc string) ([]domain.Event, string) {
	batch := "b"
	q := &domain.DocumentQueued{Meta: meta(org, 2), DocumentID: doc, Phase: domain.PhaseFull, Attempt: 1}
	return []domain.Event{
		&domain.DocumentUploaded{Meta: meta(org, 1), DocumentID: doc, BatchName: &batch, FileName: doc + ".txt", ContentType: "text/plain", Size: 10, BlobKey: "blob/" + doc},
		q,
	}, q.Meta.EventID
}

// committed is the duties group's committed offset per partition.
func (e *dutyEnv) committed() map[int32]int64 {
	e.t.Helper()
	// Its own deadline, not the env's: a test waiting a minute for a
	// commit that never comes should say so, not fail on the env's.
	ctx, cancel := context.WithTimeout(e.t.Context(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(e.store.Client()).FetchOffsets(ctx, e.store.GroupName("duties"))
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == e.store.EventsTopic() {
			out[o.Partition] = o.At
		}
	})
	return out
}

// runningDuty is a Dispatcher running in the background.
type runningDuty struct {
	d    *projections.Dispatcher
	reqs *metrics.Metrics // counts the group member's Kafka requests
	stop func()
}

// startDuty runs a dispatcher in the duties group until stop or the end of
// the test.
func (e *dutyEnv) startDuty(tweak ...func(*projections.Dispatcher)) *runningDuty {
	reqs := metrics.New()
	d := &projections.Dispatcher{
		Store: e.store, Views: e.views, Log: zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.WarnLevel),
		GroupOpts: []kgo.Opt{kgo.WithHooks(reqs.KafkaHook())},
	}
	for _, fn := range tweak {
		fn(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("dispatcher: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return &runningDuty{d: d, reqs: reqs, stop: stop}
}

// eventually waits until cond holds, checking every 10 ms, for at most a
// minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within a minute", what)
		}
		<-tick.C
	}
}

// finish stops r, then requires that it fetched no records and that the
// work topic holds exactly ids, each once.
func (e *dutyEnv) finish(name string, r *runningDuty, ids []string) {
	e.t.Helper()
	r.stop()
	noFetches(e.t, name, r)
	e.work.exactlyOnce(e.ctx, ids)
}

// noFetches fails the test if the duties' group member fetched records, or
// if its requests were not counted at all.
func noFetches(t *testing.T, name string, r *runningDuty) {
	t.Helper()
	if n := r.reqs.KafkaRequests()["Fetch"]; n != 0 {
		t.Errorf("%s: the duties member sent %d Fetch requests, want 0", name, n)
	}
	if r.reqs.KafkaRequests()["JoinGroup"] == 0 {
		t.Errorf("%s: no JoinGroup request counted; is the hook installed?", name)
	}
}

// workWatch consumes the work topic from its start and counts items by id.
type workWatch struct {
	t       *testing.T
	cl      *kgo.Client
	topic   string
	mu      sync.Mutex
	counts  map[string]int
	next    map[int32]int64 // next offset to read, per partition
	changed chan struct{}   // closed and replaced when something was read
}

func watchWork(t *testing.T, seeds []string, topic string) *workWatch {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	w := &workWatch{t: t, cl: cl, topic: topic, counts: map[string]int{}, next: map[int32]int64{}, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				it, err := eventstore.UnmarshalWork(r.Value)
				if err != nil {
					t.Errorf("work record %d/%d: %v", r.Partition, r.Offset, err)
				}
				w.counts[it.ID]++
				w.next[r.Partition] = r.Offset + 1
			})
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return w
}

// wait blocks until cond, called with the counts so far, holds.
func (w *workWatch) wait(what string, cond func(map[string]int) bool) {
	w.t.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		ok, ch := cond(w.counts), w.changed
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			w.mu.Lock()
			defer w.mu.Unlock()
			w.t.Fatalf("%s: not reached within a minute; work items %v", what, w.counts)
		}
	}
}

// dispatched waits until every id has been dispatched.
func (w *workWatch) dispatched(ids ...string) {
	w.t.Helper()
	w.wait(fmt.Sprintf("%d work items", len(ids)), func(c map[string]int) bool {
		return !slices.ContainsFunc(ids, func(id string) bool { return c[id] == 0 })
	})
}

// atEnd reads the work topic to its current end and returns how often
// each id was dispatched.
func (w *workWatch) atEnd(ctx context.Context) map[string]int {
	w.t.Helper()
	ends, err := kadm.NewClient(w.cl).ListEndOffsets(ctx, w.topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		w.t.Fatal(err)
	}
	w.wait("end of the work topic", func(map[string]int) bool {
		done := true
		ends.Each(func(o kadm.ListedOffset) { done = done && w.next[o.Partition] >= o.Offset })
		return done
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}

// exactlyOnce reads the work topic to its current end and requires exactly
// ids, each once. The dispatchers must have stopped.
func (w *workWatch) exactlyOnce(ctx context.Context, ids []string) {
	w.t.Helper()
	counts := w.atEnd(ctx)
	for _, id := range ids {
		if n := counts[id]; n != 1 {
			w.t.Errorf("work item %s dispatched %d times, want once", id, n)
		}
	}
	for id := range counts {
		if !slices.Contains(ids, id) {
			w.t.Errorf("unexpected work item %s", id)
		}
	}
}

// TestDutiesHandOver: partitions handed from one dispatcher to another,
// while both run and while none does, are continued exactly where the
// last owner stopped: nothing is dispatched twice and nothing is missed,
// including a document queued while no dispatcher ran in a partition that
// stays idle afterwards (only the catch-up after assignment finds it).
// None of the group members fetches records.
func TestDutiesHandOver(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	orgs := e.orgs()
	var ids []string
	queueAll := func(round string) []string {
		var out []string
		for i, org := range orgs {
			out = append(out, e.queue(org, fmt.Sprintf("doc_%s_%d", round, i)))
		}
		ids = append(ids, out...)
		return out
	}

	first := e.startDuty()
	eventually(t, "first dispatcher owns every partition", func() bool { return len(first.d.Owned()) == dutyPartitions })
	e.work.dispatched(queueAll("one")...)

	// A second member takes some partitions over from the first, which
	// commits where it stopped in them.
	second := e.startDuty()
	eventually(t, "partitions shared", func() bool {
		a, b := first.d.Owned(), second.d.Owned()
		both := append(slices.Clone(a), b...)
		slices.Sort(both)
		return len(a) > 0 && len(b) > 0 && slices.Equal(both, []int32{0, 1, 2, 3})
	})
	e.work.dispatched(queueAll("two")...)

	first.stop()
	second.stop()
	noFetches(t, "first", first)
	noFetches(t, "second", second)
	applied := e.views.Offsets()
	if got := e.committed(); len(got) != dutyPartitions || !maps.Equal(got, applied) {
		t.Fatalf("committed offsets %v, want where the views are: %v", got, applied)
	}

	idle := queueAll("idle")
	third := e.startDuty()
	e.work.dispatched(idle...)
	e.finish("third", third, ids)
}

// TestDutiesLeaveAddedPartitionsAlone adds partitions to the event topic,
// which the duties group then assigns: a dispatcher owns only the
// partitions the store uses (the recorded layout), and still dispatches
// in every one of them.
func TestDutiesLeaveAddedPartitionsAlone(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).UpdatePartitions(e.ctx, 2*dutyPartitions, e.store.EventsTopic())
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	d := e.startDuty()
	// The group assigns every partition in one callback.
	eventually(t, "partitions assigned", func() bool { return len(d.d.Owned()) > 0 })
	owned := d.d.Owned()
	slices.Sort(owned)
	if !slices.Equal(owned, []int32{0, 1, 2, 3}) {
		t.Fatalf("owned %v of a topic grown to %d partitions, want the %d recorded", owned, 2*dutyPartitions, dutyPartitions)
	}
	var ids []string
	for i, org := range e.orgs() {
		ids = append(ids, e.queue(org, fmt.Sprintf("doc_%d", i)))
	}
	e.work.dispatched(ids...)
	e.finish("dispatcher", d, ids)
}

// TestDutiesFillGap: records the subscription never delivered are read from
// Kafka once a later record of their partition shows the gap, and
// dispatched once.
func TestDutiesFillGap(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	org := e.orgs()[1]
	var dropping atomic.Bool
	seen := make(chan int64, 1024) // last offset of each fetch of org's partition
	p := e.store.PartitionFor(org)
	r := e.startDuty(func(d *projections.Dispatcher) {
		projections.OnDutyFetch(d, func(recs []eventstore.Record) []eventstore.Record {
			for _, rec := range recs {
				if rec.Partition == p {
					seen <- rec.Offset
				}
			}
			if dropping.Load() {
				return nil
			}
			return recs
		})
	})
	ids := []string{e.queue(org, "doc_0")}
	e.work.dispatched(ids...) // the partition is resolved and live

	dropping.Store(true)
	lost := []string{e.queue(org, "doc_1"), e.queue(org, "doc_2")}
	last := e.views.Offsets()[p] - 1
	for o := int64(-1); o < last; {
		o = <-seen
	}
	dropping.Store(false)
	ids = append(ids, lost...)
	ids = append(ids, e.queue(org, "doc_3"))
	e.work.dispatched(ids...)
	e.finish("dispatcher", r, ids)
}

// TestDutiesCatchUpCommitsAsItGoes: a new owner's catch-up of a long
// backlog commits its progress between runs, not only once it is over, so
// the group's lag moves and a crash loses at most a second of it.
func TestDutiesCatchUpCommitsAsItGoes(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	org := e.orgs()[2]
	p := e.store.PartitionFor(org)
	// Three runs' worth of records, queued while no dispatcher runs.
	var events []domain.Event
	var ids []string
	for i := range 1100 {
		evs, id := queued(org, fmt.Sprintf("doc_%d", i))
		events, ids = append(events, evs...), append(ids, id)
	}
	pos, err := e.store.Append(e.ctx, events...)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.views.WaitAll(e.ctx, pos); err != nil {
		t.Fatal(err)
	}
	end := e.views.Offsets()[p]

	ticks := make(chan time.Time, 1)
	runs, proceed, over := make(chan int64), make(chan struct{}), make(chan struct{})
	r := e.startDuty(func(d *projections.Dispatcher) {
		projections.SetDutyTicks(d, ticks)
		projections.OnDutyRun(d, func(next map[int32]int64) {
			n, ok := next[p]
			if !ok {
				return
			}
			select {
			case runs <- n:
			case <-over:
				return
			}
			select {
			case <-proceed:
			case <-over:
			}
		})
	})
	t.Cleanup(func() { close(over) }) // before the dispatcher is stopped

	first := <-runs
	if first >= end {
		t.Fatalf("the catch-up took one run (to %d); the test needs more", first)
	}
	ticks <- time.Now() // chores are due after the first run
	proceed <- struct{}{}
	second := <-runs
	// The second run has been dispatched; the catch-up is not over, and
	// the first run's progress must be committed already.
	eventually(t, fmt.Sprintf("offset %d committed during the catch-up", first), func() bool {
		return e.committed()[p] == first
	})
	proceed <- struct{}{}
	for n := second; n < end; {
		n = <-runs
		proceed <- struct{}{}
	}
	e.work.dispatched(ids...)
	ticks <- time.Now()
	eventually(t, "the end of the catch-up committed", func() bool { return e.committed()[p] == end })
	e.finish("dispatcher", r, ids)
}

// TestDutiesDroppedSubscriber: a dispatcher too slow for its subscription
// is dropped by the views; it subscribes again and reads what it missed
// from Kafka, in every partition, including those that stay idle.
func TestDutiesDroppedSubscriber(t *testing.T) {
	t.Parallel()
	e := newDutyEnv(t)
	orgs := e.orgs()
	var armed atomic.Bool
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r := e.startDuty(func(d *projections.Dispatcher) {
		projections.SetDutyBuffer(d, 1)
		projections.OnDutyFetch(d, func(recs []eventstore.Record) []eventstore.Record {
			if armed.Load() {
				once.Do(func() {
					close(stalled)
					<-release
				})
			}
			return recs
		})
	})
	ids := []string{e.queue(orgs[0], "doc_0")}
	e.work.dispatched(ids...)

	armed.Store(true)
	ids = append(ids, e.queue(orgs[0], "doc_1"))
	<-stalled
	// Each is applied before the next is appended: a fetch of its own.
	// One waits in the buffer, the next finds it full.
	for i, org := range orgs {
		ids = append(ids, e.queue(org, fmt.Sprintf("doc_%d", i+2)))
	}
	if !e.dropped.Load() {
		t.Fatal("the views did not drop the stalled dispatcher")
	}
	close(release)
	e.work.dispatched(ids...)
	e.finish("dispatcher", r, ids)
}

// TestDutiesReportGroupFailures: the duties member never polls for
// records, so the group-management failures franz-go queues for a poll
// are drained and logged by the duties themselves; left in the buffer
// they would pile up for as long as the group cannot be joined.
func TestDutiesReportGroupFailures(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(dutyPartitions))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const failures = 3
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if refused.Load() >= failures {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	store, err := eventstore.Open(ctx, c.ListenAddrs(), eventstore.Prefix("duties-fail"), eventstore.Partitions(dutyPartitions))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reported := make(chan struct{}, 64)
	log := zerolog.New(logWatch{func(line string) {
		if strings.Contains(line, "group management failed") && strings.Contains(line, "GROUP_AUTHORIZATION_FAILED") {
			reported <- struct{}{}
		}
	}})
	d := &projections.Dispatcher{Store: store, Views: setup(t).v, Log: log}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	for range failures {
		select {
		case <-reported:
		case <-ctx.Done():
			t.Fatalf("%d join failures, not all reported: %v", refused.Load(), ctx.Err())
		}
	}
	// Once the group lets it in, the member owns every partition.
	eventually(t, "partitions owned after the failures", func() bool { return len(d.Owned()) == dutyPartitions })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
