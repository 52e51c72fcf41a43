package projections

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// coordinate is the coordinator duty: after the owned partitions' events are
// applied, every job they touched whose rows are all terminal gets its
// JobCompleted (or JobCancelled), and a document whose run ended with jobs
// waiting for more gets its next run queued. The event id is derived from the job and
// its generation, and the fold accepts one outcome per generation, so a
// duplicate appended by a new owner after a hand-over is a recorded no-op.
func (d *Dispatcher) coordinate(ctx context.Context, recs []eventstore.Record) error {
	type ref struct{ org, job string }
	var touched []ref
	var out []domain.Event
	add := func(org, job string) {
		if !slices.Contains(touched, ref{org, job}) {
			touched = append(touched, ref{org, job})
		}
	}
	for _, rec := range recs {
		org := rec.Event.Header().OrgID
		if id := domain.JobIDOf(rec.Event); id != "" {
			add(org, id)
		} else if doc := domain.DocumentIDOf(rec.Event); doc != "" && endsRun(rec.Event) {
			if follow := d.followUp(org, doc); follow != nil && !slices.ContainsFunc(out, func(e domain.Event) bool {
				return e.Header().EventID == follow.Meta.EventID
			}) {
				out = append(out, follow)
			}
			jobs, err := d.Views.DocumentJobs(org, doc)
			if err != nil {
				return err
			}
			for _, id := range jobs {
				add(org, id)
			}
		}
	}
	for _, r := range touched {
		j, err := d.Views.Job(r.org, r.job)
		if err != nil {
			continue
		}
		status, p, ok := j.Outcome()
		if !ok {
			continue
		}
		meta := eventstore.NewMeta(r.org, "duty:coordinator", j.ID)
		meta.EventID = fmt.Sprintf("evt_outcome_%s_%d", j.ID, j.Generation)
		if status == domain.JobStatusCancelled {
			out = append(out, &domain.JobCancelled{Meta: meta, JobID: j.ID, Generation: j.Generation, Done: p.Done, Total: p.Total, Failed: p.Failed})
		} else {
			out = append(out, &domain.JobCompleted{Meta: meta, JobID: j.ID, Generation: j.Generation, Status: string(status), Done: p.Done, Total: p.Total, Failed: p.Failed})
		}
	}
	out = d.notInFlight(out)
	for backoff := 100 * time.Millisecond; len(out) > 0; backoff = min(2*backoff, 5*time.Second) {
		pos, err := d.Store.Append(ctx, out...)
		if err == nil {
			d.remember(out, pos)
			return nil
		}
		d.Log.Warn().Err(err).Int("outcomes", len(out)).Msg("coordinator append failed; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
	return nil
}

// followUp queues the run that jobs were waiting for once the document's
// current run has ended (see domain.PendingRun), with an id derived from the
// attempt so that a duplicate is a no-op.
func (d *Dispatcher) followUp(org, doc string) *domain.DocumentQueued {
	dc, err := d.Views.Document(org, doc)
	if err != nil {
		return nil
	}
	meta := eventstore.NewMeta(org, "duty:coordinator", doc)
	meta.EventID = fmt.Sprintf("evt_followup_%s_%d", doc, dc.Attempt+1)
	return dc.FollowUp(meta)
}

// endsRun reports whether a document event can finish a row or a run; only
// those can complete a job or release a pending run.
func endsRun(e domain.Event) bool {
	switch e.(type) {
	case *domain.DocumentPreprocessed, *domain.DocumentSucceeded, *domain.DocumentFailed, *domain.DocumentCanceled:
		return true
	}
	return false
}

// appendedMax bounds Dispatcher.appended: 4096 ids.
const appendedMax = 4096

// notInFlight drops the events this node appended that the views have not
// applied yet. Once applied, an id is forgotten: if the fold refused the
// outcome (a cancel request landed first, say), the outcome the job now
// has, under the same id, must still be appended.
func (d *Dispatcher) notInFlight(out []domain.Event) []domain.Event {
	if len(d.appended) == 0 {
		return out
	}
	applied := d.Views.Offsets()
	for id, pos := range d.appended {
		if applied[pos.Partition] > pos.Offset {
			delete(d.appended, id)
		}
	}
	return slices.DeleteFunc(out, func(e domain.Event) bool {
		_, ok := d.appended[e.Header().EventID]
		return ok
	})
}

// remember notes where the events coordinate appended landed.
func (d *Dispatcher) remember(out []domain.Event, pos []eventstore.Position) {
	if d.appended == nil || len(d.appended)+len(out) > appendedMax {
		d.appended = make(map[string]eventstore.Position, len(out))
	}
	for i, e := range out {
		d.appended[e.Header().EventID] = pos[i]
	}
}
