package projections

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docket/docket/domain"
)

// webhookProjection is the webhook outbox (DESIGN invariant 7): batch
// webhook registrations, the notifications derived from completions, their
// delivery state from WebhookDeliveryAttempted, and a due-time index per
// partition that the delivery duty of the partition's owner scans.
//
//	bw/<org>/<batch>                         batch webhook {URL, Secret}
//	wn/<org>/<notification>                  notification
//	bn/<org>/<batch>/<notification>          a batch's notifications
//	wq/<partition u32>/<due u64>/<org>/<id>  pending deliveries by due time
type webhookProjection struct{}

// BatchWebhook is a batch's webhook registration.
type BatchWebhook struct {
	URL    string
	Secret string
}

func batchHookKey(org, batch string) []byte { return []byte("bw/" + org + "/" + batch) }
func notifKey(org, id string) []byte        { return []byte("wn/" + org + "/" + id) }
func batchNotifPrefix(org, batch string) []byte {
	return []byte("bn/" + org + "/" + batch + "/")
}

func dueKey(n domain.Notification) []byte {
	k := []byte("wq/")
	k = binary.BigEndian.AppendUint32(k, uint32(n.Partition))
	k = binary.BigEndian.AppendUint64(k, uint64(n.NextAt.UnixNano()))
	return append(k, []byte("/"+n.OrgID+"/"+n.ID)...)
}

func duePrefix(p int32) []byte { return binary.BigEndian.AppendUint32([]byte("wq/"), uint32(p)) }

func (webhookProjection) apply(tx *Tx) error {
	switch ev := tx.rec.Event.(type) {
	case *domain.BatchWebhookSet:
		return tx.put(batchHookKey(ev.Meta.OrgID, ev.BatchName), BatchWebhook{URL: ev.URL, Secret: ev.Secret})
	case *domain.BatchWebhookRemoved:
		return tx.del(batchHookKey(ev.Meta.OrgID, ev.BatchName))
	case *domain.WebhookRedeliveryRequested:
		var n domain.Notification
		if _, err := tx.get(notifKey(ev.Meta.OrgID, ev.NotificationID), &n); err != nil {
			return err
		}
		next, err := n.Redeliver(ev)
		if err != nil {
			tx.noop(err)
			return nil
		}
		return putNotification(tx, next)
	case *domain.WebhookDeliveryAttempted:
		var n domain.Notification
		if _, err := tx.get(notifKey(ev.Meta.OrgID, ev.NotificationID), &n); err != nil {
			return err
		}
		next, err := n.Apply(ev)
		if err != nil {
			tx.noop(err)
			return nil
		}
		if err := tx.del(dueKey(n)); err != nil {
			return err
		}
		if next.Endpoint && next.State == domain.DeliveryGone {
			// 410 Gone: the receiver asked us to stop; disable the endpoint.
			var e domain.Endpoint
			if found, err := tx.get(endpointKey(n.OrgID, n.Target), &e); err != nil {
				return err
			} else if found {
				e.Disabled = true
				if err := tx.put(endpointKey(n.OrgID, n.Target), e); err != nil {
					return err
				}
			}
		}
		return putNotification(tx, next)
	}
	return nil
}

func putNotification(tx *Tx, n domain.Notification) error {
	if n.Pending() {
		if err := tx.set(dueKey(n), nil); err != nil {
			return err
		}
		if t, ok := tx.due[n.Partition]; tx.due != nil && (!ok || n.NextAt.UnixNano() < t) {
			tx.due[n.Partition] = n.NextAt.UnixNano()
		}
	}
	return tx.put(notifKey(n.OrgID, n.ID), n)
}

// batchDone creates the notification of a batch that just reached
// all_done, if it has a webhook. Its id comes from the log position of the
// event that completed the batch: every node derives the same one, and a
// later completion (after more documents) gets a new one.
// batchCompleted is the body of a batch.completed webhook. Its fields are
// in the order of their names, as encoding/json orders a map's keys: the
// body was a map until a profile put its encoding at 4 % of a replay, and
// stored bodies are signed and compared with a rebuild byte for byte.
type batchCompleted struct {
	Data struct {
		BatchName   string `json:"batch_name"`
		CompletedAt string `json:"completed_at"`
		// Only the statuses that occur are present (the OpenAPI
		// description).
		Counts map[domain.Public]int `json:"counts"`
		Status domain.Public         `json:"status"`
		Total  int                   `json:"total"`
	} `json:"data"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
}

func batchCompletedPayload(b domain.Batch, at, completed time.Time) ([]byte, error) {
	var body batchCompleted
	body.Type, body.Timestamp = "batch.completed", at.UTC().Format(time.RFC3339Nano)
	d := &body.Data
	d.BatchName, d.Status, d.Total = b.Name, b.Status(), b.Documents
	d.CompletedAt = completed.UTC().Format(time.RFC3339Nano)
	d.Counts = make(map[domain.Public]int, len(b.Counts))
	for _, p := range domain.PublicStatuses {
		if n := b.Counts.Of(p); n != 0 {
			d.Counts[p] = n
		}
	}
	return json.Marshal(body)
}

func (webhookProjection) batchDone(tx *Tx, b domain.Batch) error {
	var hook BatchWebhook
	found, err := tx.get(batchHookKey(b.OrgID, b.Name), &hook)
	if err != nil || !found {
		return err
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d/%d", b.OrgID, b.Name, tx.rec.Partition, tx.rec.Offset))
	at := tx.rec.Event.Header().OccurredAt
	_, _, completed := b.Timestamps()
	payload, err := batchCompletedPayload(b, at, completed)
	if err != nil {
		return err
	}
	n := domain.Notification{
		ID: "msg_" + hex.EncodeToString(sum[:13]), OrgID: b.OrgID, Partition: tx.rec.Partition,
		Target: b.Name, URL: hook.URL, Secret: hook.Secret, EventType: "batch.completed",
		Payload: payload, CreatedAt: at, State: "pending", NextAt: at,
	}
	if err := tx.set(append(batchNotifPrefix(b.OrgID, b.Name), n.ID...), nil); err != nil {
		return err
	}
	return putNotification(tx, n)
}
