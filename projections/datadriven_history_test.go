package projections_test

import (
	"fmt"
	"strings"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/projections"
)

// moreEvent builds the job and webhook events of the data-driven tests, or
// returns nil for an unknown kind.
func (r *runner) moreEvent(kind string, a *args, m domain.Meta, need func(string) string) domain.Event {
	switch kind {
	case "job-create":
		var session *string
		if a.has("session") {
			session = strp(a.str("session", ""))
		}
		return &domain.JobCreated{Meta: m, JobID: need("job"), Kind: a.str("kind", domain.JobPreprocess),
			SessionID: session, DocumentIDs: strings.Split(need("docs"), ",")}
	case "job-cancel":
		return &domain.JobCancelRequested{Meta: m, JobID: need("job")}
	case "job-complete":
		return &domain.JobCompleted{Meta: m, JobID: need("job"), Generation: a.int("generation", 0), Status: need("status"),
			Done: a.int("done", 0), Total: a.int("total", 0), Failed: a.int("failed", 0)}
	case "webhook-set":
		return &domain.BatchWebhookSet{Meta: m, BatchName: need("batch"), URL: need("url"), Secret: need("secret")}
	}
	return nil
}

var historyKinds = map[string]projections.HistoryKind{
	"document": projections.HistoryDocument, "batch": projections.HistoryBatch, "job": projections.HistoryJob,
}

// historyQuery answers the history and as-of queries; ok is false for any
// other word.
func (r *runner) historyQuery(word string, a *args, line string) (out []string, ok bool) {
	if word != "history" && word != "as-of" {
		return nil, false
	}
	if len(a.pos) != 3 || historyKinds[a.pos[0]] == "" {
		r.fatalf("%q: want document|batch|job <org> <id>", line)
	}
	kind, org, id := historyKinds[a.pos[0]], a.pos[1], a.pos[2]
	if word == "as-of" {
		return r.asOf(kind, org, id, a.int("at", 0)), true
	}
	limit, cursor := a.int("limit", 100), ""
	for page := 1; page <= 100; page++ {
		es, next, err := r.f.v.History(kind, org, id, cursor, limit)
		if err != nil {
			return append(out, "error: "+err.Error()), true
		}
		var evs []string
		for _, e := range es {
			evs = append(evs, fmt.Sprintf("%d/%d:%s", e.Partition, e.Offset, e.Event.Type()))
		}
		out = append(out, fmt.Sprintf("page %d: %s next=%t", page, list(evs), next != ""))
		if next == "" {
			return out, true
		}
		cursor = next
	}
	return append(out, "too many pages"), true
}

func (r *runner) asOf(kind projections.HistoryKind, org, id string, sec int) []string {
	past, err := r.f.v.At(kind, org, id, at(int64(sec)))
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	defer past.Close()
	switch kind {
	case projections.HistoryDocument:
		d, err := past.Document(org, id)
		if err != nil {
			return notFound(err)
		}
		return showDocument(d)
	case projections.HistoryBatch:
		b, err := past.Batch(org, id)
		if err != nil {
			return notFound(err)
		}
		return []string{showBatch(b)}
	}
	j, err := past.Job(org, id)
	if err != nil {
		return notFound(err)
	}
	var rows []string
	for _, row := range j.Rows {
		rows = append(rows, row.DocumentID+":"+string(row.Status))
	}
	p := j.Progress()
	return []string{fmt.Sprintf("status=%s done=%d/%d failed=%d rows=%s started=%s last_progress=%s",
		j.Status(), p.Done, p.Total, p.Failed, strings.Join(rows, ","), ts(j.StartedAt), ts(j.LastProgressAt))}
}
