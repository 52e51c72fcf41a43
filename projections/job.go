package projections

import (
	"strings"

	"github.com/docket/docket/domain"
)

// jobProjection maintains j/<org>/<job> from job events and from the
// transitions of the runs that name a job, the dj/<org>/<doc>/<job> index
// of the jobs covering a document (read by the coordinator and the API),
// and s/<org>/<session> -> job id.
type jobProjection struct{}

func jobKey(org, id string) []byte          { return []byte("j/" + org + "/" + id) }
func sessionKey(org, id string) []byte      { return []byte("s/" + org + "/" + id) }
func docJobPrefix(org, doc string) []byte   { return []byte("dj/" + org + "/" + doc + "/") }
func docJobKey(org, doc, job string) []byte { return []byte("dj/" + org + "/" + doc + "/" + job) }
func jobIDFromIndex(k []byte, prefix []byte) string {
	return strings.TrimPrefix(string(k), string(prefix))
}

func (p jobProjection) apply(tx *Tx) error {
	ev := tx.rec.Event
	org, at := ev.Header().OrgID, ev.Header().OccurredAt
	var j domain.Job
	if _, err := tx.get(jobKey(org, domain.JobIDOf(ev)), &j); err != nil {
		return err
	}
	next, err := j.Apply(ev)
	if err != nil {
		tx.noop(err)
		return nil
	}
	if _, ok := ev.(*domain.JobCancelRequested); ok {
		for _, r := range next.Rows {
			var d domain.Document
			if _, err := tx.get(docKey(org, r.DocumentID), &d); err != nil {
				return err
			}
			next = next.CancelIdle(d, at)
		}
	}
	if created, ok := ev.(*domain.JobCreated); ok {
		for _, r := range next.Rows {
			if err := tx.set(docJobKey(org, r.DocumentID, next.ID), nil); err != nil {
				return err
			}
			var d domain.Document
			if _, err := tx.get(docKey(org, r.DocumentID), &d); err != nil {
				return err
			}
			next = next.Adopt(d, created.Force, at)
		}
		if next.SessionID != "" {
			if err := tx.put(sessionKey(org, next.SessionID), next.ID); err != nil {
				return err
			}
		}
	}
	switch ev.(type) {
	case *domain.JobCompleted, *domain.JobCancelled:
		if err := (endpointProjection{}).jobDone(tx, next); err != nil {
			return err
		}
	}
	return tx.put(jobKey(org, next.ID), next)
}

// track moves the jobs covering the document along with its transition.
// Job.Track moves a row only for a run that names its job, and leaves a
// job without a row for the document as it is, so the jobs the run names
// are the only ones to look at. Not iterating every job that covers the
// document (the dj/ index) leaves a fetch of job runs without an index
// (fetchBatch).
func (jobProjection) track(tx *Tx, after *domain.Document) error {
	org := after.OrgID
	at := tx.rec.Event.Header().OccurredAt
	for _, id := range after.JobIDs {
		var j domain.Job
		if _, err := tx.get(jobKey(org, id), &j); err != nil {
			return err
		}
		next := j.Track(*after, at)
		if next.LastProgressAt.Equal(j.LastProgressAt) && len(next.Rows) == len(j.Rows) && sameRows(next, j) {
			continue
		}
		if err := tx.put(jobKey(org, id), next); err != nil {
			return err
		}
	}
	return nil
}

func sameRows(a, b domain.Job) bool {
	for i := range a.Rows {
		if a.Rows[i] != b.Rows[i] {
			return false
		}
	}
	return true
}
