package projections_test

import (
	"testing"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// Endpoints created and deleted between documents, in the same fetch as
// them and in fetches of their own, are notified exactly as they stood at
// each document's event: the endpoints the fold keeps in memory between
// fetches never outlive a change.
func TestEndpointNotificationsFollowEndpointChanges(t *testing.T) {
	t.Parallel()
	f, l := setup(t), newLog()
	var lc lifecycles
	created := func(id string) eventstore.Record {
		return l.record(0, &domain.WebhookEndpointCreated{Meta: meta("o1", 1), EndpointID: id,
			URL: "https://example.test/" + id, Events: []string{domain.EventDocumentProcessed}, Secret: "s"})
	}
	deleted := func(id string) eventstore.Record {
		return l.record(0, &domain.WebhookEndpointDeleted{Meta: meta("o1", 1), EndpointID: id})
	}
	// want checks each endpoint's notifications, by document.
	want := func(step string, docs map[string][]string) {
		t.Helper()
		for ep, ids := range docs {
			ns, err := f.v.EndpointNotifications("o1", ep)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, n := range ns {
				got[n.DocumentID] = true
			}
			if len(ns) != len(ids) || len(got) != len(ids) {
				t.Errorf("%s: endpoint %s has %d notifications for %v, want %v", step, ep, len(ns), got, ids)
				continue
			}
			for _, id := range ids {
				if !got[id] {
					t.Errorf("%s: endpoint %s was not notified of %s (has %v)", step, ep, id, got)
				}
			}
		}
	}

	f.apply(lc.next(l, nil)...) // doc_1: no endpoint yet
	f.apply(created("ep_1"))
	f.apply(lc.next(l, nil)...) // doc_2
	want("one endpoint", map[string][]string{"ep_1": {"doc_2"}})

	// One fetch: a document, a new endpoint, another document.
	recs := lc.next(l, nil) // doc_3
	recs = append(recs, created("ep_2"))
	recs = lc.next(l, recs) // doc_4
	f.apply(recs...)
	want("created mid-fetch", map[string][]string{"ep_1": {"doc_2", "doc_3", "doc_4"}, "ep_2": {"doc_4"}})

	f.apply(deleted("ep_1"))
	f.apply(lc.next(l, nil)...) // doc_5
	want("deleted", map[string][]string{"ep_1": {"doc_2", "doc_3", "doc_4"}, "ep_2": {"doc_4", "doc_5"}})

	// One fetch: delete the last endpoint, then a document.
	recs = append([]eventstore.Record{deleted("ep_2")}, lc.next(l, nil)...) // doc_6
	f.apply(recs...)
	want("deleted mid-fetch", map[string][]string{"ep_2": {"doc_4", "doc_5"}})
}
