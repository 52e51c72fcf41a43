package projections

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// ErrNotCaughtUp is returned when a read-your-writes wait runs out of time.
var ErrNotCaughtUp = errors.New("projections: view has not caught up with the write")

// Views owns the Pebble read models and the loop that applies the log to them.
type Views struct {
	db    *pebble.DB
	dir   string
	log   zerolog.Logger
	noops atomic.Int64

	mu      sync.Mutex
	applied map[int32]int64 // next offset to apply, per partition
	changed chan struct{}   // closed and replaced after every applied fetch

	documents   documentProjection
	batches     batchProjection
	orgs        orgProjection
	idempotency idempotencyProjection
	jobs        jobProjection
	history     historyProjection
	noHistory   bool // time-travel views (At) need no history of their own
	// memTable is Pebble's memtable size: liveMemTable, or a rebuild's.
	memTable uint64
	// blockCache is Pebble's block cache in bytes.
	blockCache int64
	// wal keeps Pebble's write-ahead log; WithoutWAL drops it.
	wal bool
	// ephemeral views (time travel's, in memory) need nothing to survive
	// them: no flushes for durability, at Close or after a durable write.
	ephemeral bool

	listeners []func([]eventstore.Record)
	keys      keyCache      // API keys by hash (keycache.go)
	cache     objectCache   // decoded views across fetches (cache.go)
	endpoints endpointCache // committed webhook endpoints by org (endpoint.go)
	counts    phaseCounts   // committed ph/ counts (phase.go)
	written   *keyFilter    // every key the views hold (keyfilter.go)
	// filterLimit is the most keys written holds before it turns off.
	filterLimit int
	rebuild     bool      // reads further ahead and folds larger batches (Run)
	due         dueFloors // where scans of the due index start (due.go)
	// batchHint is the size of a recent fetch's batch, at most
	// maxBatchHint: the next fetch's batch starts that large. Pebble grows
	// a batch by doubling from a few kilobytes, which copied a full fetch's
	// batch about a dozen times (1.5 % of the 1M-event replay).
	batchHint int
	// indexedFetches counts the fetches whose batch needed an index
	// (fetchBatch). The apply goroutine's.
	indexedFetches int
	// holdCommits, in tests, holds each commit of a Pipeline until the
	// next fetch has folded (staged.gate).
	holdCommits bool
	// failCommit, in tests, is asked before each commit writes anything:
	// an error fails that commit (and the views forget the fold).
	failCommit func() error
}

// maxBatchHint bounds batchHint, so that one fetch of unusually large
// events does not make every later batch start that large: 8 MiB, four
// full fetches of the bench's log.
const maxBatchHint = 8 << 20

// Option configures Views.
type Option func(*Views)

// WithLogger sets the logger. Default: discard.
func WithLogger(l zerolog.Logger) Option { return func(v *Views) { v.log = l } }

// OnApplied registers fn to be called with the records of every fetch
// that were newly applied, after the commit: one fetch at a time, in the
// log's order, on the goroutine that committed it (Pipeline), so never
// alongside another call. Default: none.
func OnApplied(fn func([]eventstore.Record)) Option {
	return func(v *Views) { v.listeners = append(v.listeners, fn) }
}

// WithCacheEntries sets how many decoded documents, batches and jobs the
// apply loop keeps between fetches, per generation of its cache (it holds
// at most twice that); 0 turns the cache off. Default: DefaultCacheEntries.
func WithCacheEntries(n int) Option { return func(v *Views) { v.cache.size = n } }

// liveMemTable is the memtable of live views: 8 MiB, twice Pebble's
// default. A full fetch (4096 records) is a batch of about 2 MiB, and
// Pebble turns a batch larger than half the memtable into a memtable of its
// own, sorted and flushed at once; 8 MiB keeps full fetches in the
// memtable, which cut the fold's CPU by a fifth (BenchmarkApplyLifecycle,
// BENCHMARKS.md). 16 MiB measured the same and 64 MiB slower (fewer but
// longer flushes that the fold waited for). Pebble keeps up to two
// memtables, so this costs up to 8 MiB more than the default, a constant.
const liveMemTable = 8 << 20

// DefaultBlockCache is the size of Pebble's block cache unless
// WithBlockCache says otherwise: 32 MiB (Pebble's own default is 8 MiB, which
// the views of a few hundred thousand documents outgrow).
const DefaultBlockCache = 32 << 20

// WithBlockCache sets the size of Pebble's block cache in bytes. Default:
// DefaultBlockCache.
func WithBlockCache(bytes int64) Option { return func(v *Views) { v.blockCache = bytes } }

// WithoutWAL drops Pebble's write-ahead log for the views. Default: kept.
// The views are derived from the event log and commit with the offsets
// they reach, so what a crash loses is applied again from the log; without
// a WAL, a crash of the process, not only of the machine, loses what the
// memtables held (at most two, 16 MiB, about 50,000 events of the bench's
// log), and a node killed before its first flush keeps no views at all.
// A node applies that again before it serves, since it waits at start for
// its views to reach the log's end. The WAL was 93 of the 206 MB the views
// wrote to disk over a bench's 303,634 events, but dropping it moved
// neither their CPU nor the tails beyond this machine's noise
// (BENCHMARKS.md, "The views without a WAL"). Close flushes the
// memtables, so a clean restart applies nothing again.
func WithoutWAL() Option { return func(v *Views) { v.wal = false } }

// Open opens (or creates) the views in dir and loads the stored offsets.
func Open(dir string, opts ...Option) (*Views, error) { return open(dir, nil, opts) }

// open opens the views in dir on fs (nil: the operating system's).
func open(dir string, fs vfs.FS, opts []Option) (*Views, error) {
	v := &Views{dir: dir, log: zerolog.Nop(), applied: map[int32]int64{}, changed: make(chan struct{})}
	v.cache.size = DefaultCacheEntries
	v.counts = phaseCounts{}
	v.blockCache = DefaultBlockCache
	v.filterLimit = keyFilterLimit
	v.memTable = liveMemTable
	v.wal = true
	v.documents.batches = &v.batches
	v.documents.jobs = &v.jobs
	for _, o := range opts {
		o(v)
	}
	po := &pebble.Options{Logger: pebbleLogger{v.log}, FS: fs, MemTableSize: v.memTable, CacheSize: v.blockCache}
	// Most reads of the apply path are for keys that do not exist yet (a
	// new document, batch or count, a batch without a webhook): a Bloom
	// filter answers those without reading a block of every level.
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// Most of what the views write is new keys at the tails of many key
	// families (documents, history, notifications), so every compaction of
	// level 0 into the base level rewrites most of the base level. Letting
	// level 0 gather 16 sublevels (Pebble: 4) before that rewrite makes it
	// rarer: at 8 the apply path took 14 % less CPU than at 4, at 16
	// another 13-15 % less, over the bench's log and a generated one of 2M
	// events, with a quarter fewer bytes compacted. A document's point read
	// cost 3.4 µs more; pages of history and of a batch's documents did not
	// change. At 32 those pages were 1.15 and 1.4 times slower
	// (BENCHMARKS.md, "Level 0 at 16 sublevels"). Writes stop only at 64
	// (Pebble: 12), so that a backlog does not stall the fold.
	po.L0CompactionThreshold, po.L0StopWritesThreshold = 16, 64
	// The format stays Pebble's default, with Snappy: on the bench's log
	// the columnar format took 7-17 % more CPU a record and MinLZ 8-13 %
	// more on top, and tables cut at key families (a SpanPolicyFunc) saved
	// compaction only for a single organisation and made 2.4-6 times the
	// tables (BENCHMARKS.md, "Tables split at key families").
	po.DisableWAL = !v.wal
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("projections: open %s: %w", dir, err)
	}
	v.db = db
	err = scan(db, []byte(prefixOffset), nil, func(k, val []byte) (bool, error) {
		p := int32(binary.BigEndian.Uint32(k[len(prefixOffset):]))
		v.applied[p] = int64(binary.BigEndian.Uint64(val))
		return true, nil
	})
	if err == nil {
		v.applied, err = v.ensureHistory(v.applied)
		if err == nil {
			err = v.backfillPhases()
		}
		if err == nil {
			v.written = newKeyFilter(v.filterLimit)
			err = v.written.load(db)
		}
	}
	if err != nil {
		v.written.release()
		db.Close()
		return nil, err
	}
	return v, nil
}

// MemoryUse is what the views hold in memory, by structure, in bytes.
type MemoryUse struct {
	// BlockCache is Pebble's block cache in use; it fills up to its size
	// (WithBlockCache) as the views are read.
	BlockCache int64
	// MemTables is Pebble's memtables, the live one and those waiting for
	// a flush.
	MemTables int64
	// KeyFilter is the filter of every key the views hold (keyfilter.go):
	// about 1.5 bytes a key, in doubling stages, none past its limit.
	KeyFilter int64
}

// Memory reports what the views hold in memory. Safe to call from any
// goroutine.
func (v *Views) Memory() MemoryUse {
	m := v.db.Metrics()
	return MemoryUse{BlockCache: m.BlockCache.Size, MemTables: int64(m.MemTable.Size), KeyFilter: v.written.bytes.Load()}
}

// Close closes the database. Run must have returned. Without a WAL it
// first flushes the memtables, which Pebble's Close would drop.
func (v *Views) Close() error {
	v.written.release()
	var err error
	if !v.wal && !v.ephemeral {
		if err = v.db.Flush(); err != nil {
			err = fmt.Errorf("projections: flush before close: %w", err)
		}
	}
	return errors.Join(err, v.db.Close())
}

// commitDurable commits b so that a crash keeps it: synced through the WAL
// if there is one, else flushed with the memtables into sstables, which
// Pebble syncs with its manifest. Only for the rare writes whose loss the
// log could not repair (the views' format, the log they belong to, a
// backfill), never the apply path's.
func (v *Views) commitDurable(b *pebble.Batch) error {
	if v.wal {
		return b.Commit(pebble.Sync)
	}
	if err := b.Commit(pebble.NoSync); err != nil || v.ephemeral {
		return err
	}
	return v.db.Flush()
}

// DB exposes the database for verification tools.
func (v *Views) DB() *pebble.DB { return v.db }

// Noops counts events the fold refused since start.
func (v *Views) Noops() int64 { return v.noops.Load() }

// Offsets returns a copy of the next offset to apply per partition.
func (v *Views) Offsets() map[int32]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[int32]int64, len(v.applied))
	for p, o := range v.applied {
		out[p] = o
	}
	return out
}

// Run applies the log from the stored offsets until ctx ends. With until
// set, it applies nothing at or past until's offsets and returns nil once
// every partition has reached them. It returns ErrForeignLog at once if
// the views were built from another log (logid.go), and records store's
// log in views that have no record of theirs. It returns
// eventstore.ErrLogTruncated, at start or later, if the log no longer
// holds the events the views need next: views folded without them would
// be wrong.
//
// Fetching and Avro decoding run in a goroutine of their own, a fetch
// ahead of the fold, so that on two cores decoding overlaps folding. A
// rebuild reads further ahead and folds the fetches already waiting
// together, in one Pebble batch; a live node does not, because after a
// stall those large batches left the Go heap (and resident size) tens of
// MiB larger for minutes (10-minute bench run: +18.9 %).
func (v *Views) Run(ctx context.Context, store *eventstore.Store, until map[int32]int64) (err error) {
	if err := v.bindLog(store.EventsTopic(), store.EventsTopicID()); err != nil {
		return err
	}
	from := map[int32]int64{}
	for p := int32(0); p < store.Partitions(); p++ {
		from[p] = v.Offsets()[p]
	}
	if err := checkStart(ctx, store, from); err != nil {
		return err
	}
	r, err := store.NewReader(from)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	ahead, most := 1, pollSize
	if v.rebuild {
		ahead, most = rebuildAhead, rebuildApply
	}
	fetches := make(chan []eventstore.Record, ahead)
	truncated := make(chan error, 1)
	var polling sync.WaitGroup
	polling.Go(func() { v.poll(ctx, r, fetches, truncated) })
	defer func() {
		cancel()
		polling.Wait()
		r.Close()
	}()
	p := v.Pipeline()
	defer func() {
		if ferr := p.Flush(); err == nil {
			err = ferr
		}
	}()
	for {
		// A fetch commits while the next one folds, when there is a next
		// one already: otherwise the commit is waited for here, so that
		// nothing applied waits for a fetch that may not come.
		if len(fetches) == 0 {
			if err := p.Flush(); err != nil {
				return err
			}
		}
		if until != nil && v.reached(until) {
			return nil
		}
		var recs []eventstore.Record
		select {
		case recs = <-fetches:
		case err := <-truncated:
			return err
		case <-ctx.Done():
			return nil
		}
	more:
		for len(recs) < most {
			select {
			case next := <-fetches:
				recs = append(recs, next...)
			default:
				break more
			}
		}
		if until != nil {
			recs = slices.DeleteFunc(recs, func(r eventstore.Record) bool { return r.Offset >= until[r.Partition] })
		}
		if err := p.Apply(recs); err != nil {
			return err
		}
	}
}

const (
	// pollSize is the most records one poll returns.
	pollSize = 4096
	// rebuildAhead is how many decoded fetches wait for a rebuild's fold
	// (a live node's: one).
	rebuildAhead = 4
	// rebuildApply is roughly the most records a rebuild folds into one
	// Pebble batch (a live node's: one poll's).
	rebuildApply = 4 * pollSize
)

// poll fetches and decodes into fetches until ctx ends, or until the log
// no longer holds what the views need next (truncated).
func (v *Views) poll(ctx context.Context, r *eventstore.Reader, fetches chan<- []eventstore.Record, truncated chan<- error) {
	for {
		recs, err := r.Poll(ctx, pollSize)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, eventstore.ErrLogTruncated) {
			// What the fetch returned before the gap is not applied
			// either: the views stop where they are.
			truncated <- fmt.Errorf("projections: %w", err)
			return
		}
		if err != nil {
			v.log.Warn().Err(err).Msg("projections: fetch failed; retrying")
			continue
		}
		if len(recs) == 0 {
			continue
		}
		select {
		case fetches <- recs:
		case <-ctx.Done():
			return
		}
	}
}

func (v *Views) reached(until map[int32]int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for p, o := range until {
		if v.applied[p] < o {
			return false
		}
	}
	return true
}

// ApplyRecords applies one fetch atomically: view updates and offsets in a
// single batch. Records at offsets already applied are skipped, which keeps
// a re-delivered fetch harmless. It returns once the fetch is committed;
// Run folds a fetch while the one before it commits (Pipeline).
func (v *Views) ApplyRecords(recs []eventstore.Record) error {
	p := v.Pipeline()
	if err := p.Apply(recs); err != nil {
		return err
	}
	return p.Flush()
}

// applyOne runs the projections on one event, the history index around
// them: it needs what a delete is about to drop and whether the fold
// refused the event.
func (v *Views) applyOne(tx *Tx) error {
	if v.noHistory {
		return v.project(tx)
	}
	pre, err := v.history.before(tx)
	if err != nil {
		return err
	}
	if err := v.project(tx); err != nil {
		return err
	}
	return v.history.after(tx, pre)
}

func (v *Views) project(tx *Tx) error {
	switch ev := tx.rec.Event.(type) {
	case *domain.BatchDeleted:
		return v.batches.deleteBatch(tx, ev)
	case *domain.OrgCreated, *domain.ApiKeyIssued, *domain.ApiKeyRevoked:
		return v.orgs.apply(tx)
	case *domain.IdempotencyKeyClaimed, *domain.IdempotencyKeyCompleted, *domain.IdempotencyKeyReleased:
		return v.idempotency.apply(tx)
	case *domain.JobCreated, *domain.JobCancelRequested, *domain.JobReopened, *domain.JobCompleted, *domain.JobCancelled:
		return v.jobs.apply(tx)
	case *domain.BatchWebhookSet, *domain.BatchWebhookRemoved, *domain.WebhookDeliveryAttempted, *domain.WebhookRedeliveryRequested:
		return webhookProjection{}.apply(tx)
	case *domain.WebhookEndpointCreated, *domain.WebhookEndpointDeleted:
		return endpointProjection{}.apply(tx)
	}
	return v.documents.apply(tx)
}

// WaitFor blocks until the record at pos has been applied, or ctx ends. It is
// the read-your-writes barrier of every write handler.
func (v *Views) WaitFor(ctx context.Context, pos eventstore.Position) error {
	for {
		v.mu.Lock()
		done := v.applied[pos.Partition] > pos.Offset
		ch := v.changed
		v.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: %d/%d: %w", ErrNotCaughtUp, pos.Partition, pos.Offset, ctx.Err())
		}
	}
}

// WaitAll waits for every position.
func (v *Views) WaitAll(ctx context.Context, pos []eventstore.Position) error {
	for _, p := range pos {
		if err := v.WaitFor(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// Lag returns, per partition, how many records are not yet applied given the
// log's end offsets.
func (v *Views) Lag(end map[int32]int64) map[int32]int64 {
	applied := v.Offsets()
	out := make(map[int32]int64, len(end))
	for p, e := range end {
		if l := e - applied[p]; l > 0 {
			out[p] = l
		} else {
			out[p] = 0
		}
	}
	return out
}

// pebbleLogger sends Pebble's messages to zerolog; its chatty info lines go
// to debug.
type pebbleLogger struct{ l zerolog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug().Msgf("pebble: "+format, args...) }
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error().Msgf("pebble: "+format, args...)
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Fatal().Msgf("pebble: "+format, args...)
}
