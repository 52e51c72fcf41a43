package main

import (
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// viewsWrote is what the views wrote to disk while the apply path or the
// replay ran, from Pebble's metrics before the views close. Their CPU a
// record moves with how often the views flush and compact, which grows
// with the log and with Pebble's settings (BENCHMARKS.md, "The apply path
// over the whole log" and "Level 0 at 16 sublevels"): these say which
// happened in this run, without a private build to ask.
type viewsWrote struct {
	WALBytes    uint64 `json:"wal_bytes"`
	Flushes     int64  `json:"flushes"`
	FlushBytes  uint64 `json:"flushed_bytes"`
	Compactions int64  `json:"compactions"`
	// CompactRead and CompactWritten are the tables' bytes compactions
	// read and wrote, over every level.
	CompactRead    uint64 `json:"compacted_read_bytes"`
	CompactWritten uint64 `json:"compacted_written_bytes"`
	// WriteAmp is Pebble's: what flushes and compactions wrote, the WAL
	// included, over what came in through the WAL.
	WriteAmp float64 `json:"write_amplification"`
	// Level 0 when the run ended, and the compaction debt left: a run
	// that ends with a backlog did not pay for all it wrote.
	L0Tables    int64  `json:"level0_tables"`
	L0Sublevels int32  `json:"level0_sublevels"`
	DebtBytes   uint64 `json:"compaction_debt_bytes"`
}

func wroteBy(db *pebble.DB) *viewsWrote {
	m := db.Metrics()
	w := &viewsWrote{
		WALBytes: m.WAL.BytesWritten, Flushes: m.Flush.Count, FlushBytes: m.Levels[0].TableBytesFlushed,
		Compactions: m.Compact.Count, L0Tables: m.Levels[0].TablesCount, L0Sublevels: m.Levels[0].Sublevels,
		DebtBytes: m.Compact.EstimatedDebt,
	}
	for _, l := range m.Levels {
		w.CompactRead += l.TableBytesRead
		w.CompactWritten += l.TableBytesCompacted
	}
	total := m.Total()
	w.WriteAmp = total.WriteAmp()
	return w
}

func (w *viewsWrote) print(out io.Writer, name string) {
	const mb = 1 << 20
	fmt.Fprintf(out, "  %s wrote: WAL %.1f MB; flushes %d (%.1f MB); compactions %d (read %.1f MB, wrote %.1f MB); write amplification %.2f; level 0 at the end %d tables in %d sublevels, compaction debt %.1f MB\n",
		name, float64(w.WALBytes)/mb, w.Flushes, float64(w.FlushBytes)/mb, w.Compactions, float64(w.CompactRead)/mb,
		float64(w.CompactWritten)/mb, w.WriteAmp, w.L0Tables, w.L0Sublevels, float64(w.DebtBytes)/mb)
}
