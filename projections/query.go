package projections

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/docket/docket/domain"
)

// ErrNotFound is returned for anything that does not exist in the caller's
// org, including things that exist in another org.
var ErrNotFound = errors.New("projections: not found")

// Document returns one document of org.
func (v *Views) Document(org, id string) (domain.Document, error) {
	var d domain.Document
	found, err := getView(v.db, docKey(org, id), &d)
	if err == nil && !found {
		err = ErrNotFound
	}
	return d, err
}

// Batch returns one live batch of org.
func (v *Views) Batch(org, name string) (domain.Batch, error) {
	b := domain.NewBatch(org, name)
	found, err := getView(v.db, batchKey(org, name), &b)
	if err == nil && !found {
		err = ErrNotFound
	}
	return b, err
}

// Batches lists org's batches by name, after the name `after`, at most limit.
// next is the cursor for the following page, "" at the end.
func (v *Views) Batches(org, after string, limit int) (out []domain.Batch, next string, err error) {
	limit = max(limit, 1)
	prefix := batchPrefix(org)
	var from []byte
	if after != "" {
		from = append(batchKey(org, after), 0)
	}
	err = scan(v.db, prefix, from, func(k, val []byte) (bool, error) {
		if len(out) == limit {
			next = out[len(out)-1].Name
			return false, nil
		}
		b := domain.NewBatch(org, strings.TrimPrefix(string(k), string(prefix)))
		if _, err := getView(v.db, k, &b); err != nil {
			return false, err
		}
		out = append(out, b)
		return true, nil
	})
	return out, next, err
}

// BatchDocuments pages through a batch's documents in upload order. The
// cursor is opaque to clients; "" starts at the beginning.
func (v *Views) BatchDocuments(org, name, cursor string, limit int) (out []domain.Document, next string, err error) {
	limit = max(limit, 1)
	prefix := memberPrefix(org, name)
	var from []byte
	if cursor != "" {
		from = append([]byte(string(prefix)+cursor), 0)
	}
	var last string
	err = scan(v.db, prefix, from, func(k, _ []byte) (bool, error) {
		if len(out) == limit {
			next = last
			return false, nil
		}
		var d domain.Document
		if _, err := getView(v.db, docKey(org, memberDoc(k)), &d); err != nil {
			return false, err
		}
		out = append(out, d)
		last = strings.TrimPrefix(string(k), string(prefix))
		return true, nil
	})
	return out, next, err
}

// Org returns an organisation.
func (v *Views) Org(id string) (domain.Org, error) {
	var o domain.Org
	found, err := getView(v.db, orgKey(id), &o)
	if err == nil && !found {
		err = ErrNotFound
	}
	return o, err
}

// KeyByHash finds a key by the SHA-256 of its secret.
func (v *Views) KeyByHash(hash string) (domain.ApiKey, error) {
	k, gen, ok := v.keys.get(hash)
	if ok {
		return k, nil
	}
	found, err := getView(v.db, apiKeyKey(hash), &k)
	if err == nil && !found {
		err = ErrNotFound
	}
	if err == nil {
		v.keys.put(hash, k, gen)
	}
	return k, err
}

// Idempotency returns the record of one key; a zero record when unused.
func (v *Views) Idempotency(org, key string) (domain.Idempotency, error) {
	var r domain.Idempotency
	_, err := getView(v.db, idemKey(org, key), &r)
	return r, err
}

// Job returns one job of org.
func (v *Views) Job(org, id string) (domain.Job, error) {
	var j domain.Job
	found, err := getView(v.db, jobKey(org, id), &j)
	if err == nil && !found {
		err = ErrNotFound
	}
	return j, err
}

// SessionJob returns the job id of an extraction session of org.
func (v *Views) SessionJob(org, session string) (string, error) {
	var id string
	found, err := getView(v.db, sessionKey(org, session), &id)
	if err == nil && !found {
		err = ErrNotFound
	}
	return id, err
}

// DocumentJobs lists the jobs covering a document.
func (v *Views) DocumentJobs(org, doc string) ([]string, error) {
	prefix := docJobPrefix(org, doc)
	var ids []string
	err := scan(v.db, prefix, nil, func(k, _ []byte) (bool, error) {
		ids = append(ids, jobIDFromIndex(k, prefix))
		return true, nil
	})
	return ids, err
}

// BatchWebhook returns a batch's webhook registration.
func (v *Views) BatchWebhook(org, batch string) (BatchWebhook, error) {
	var h BatchWebhook
	found, err := getView(v.db, batchHookKey(org, batch), &h)
	if err == nil && !found {
		err = ErrNotFound
	}
	return h, err
}

// Notification returns one notification of org.
func (v *Views) Notification(org, id string) (domain.Notification, error) {
	var n domain.Notification
	found, err := getView(v.db, notifKey(org, id), &n)
	if err == nil && !found {
		err = ErrNotFound
	}
	return n, err
}

// BatchNotifications lists a batch's notifications, oldest first by id.
func (v *Views) BatchNotifications(org, batch string) ([]domain.Notification, error) {
	return v.notificationsUnder(org, batchNotifPrefix(org, batch))
}

// notificationsUnder loads the notifications an index prefix lists.
func (v *Views) notificationsUnder(org string, prefix []byte) ([]domain.Notification, error) {
	var out []domain.Notification
	err := scan(v.db, prefix, nil, func(k, _ []byte) (bool, error) {
		n, err := v.Notification(org, string(k[len(prefix):]))
		if err != nil {
			return false, err
		}
		out = append(out, n)
		return true, nil
	})
	return out, err
}

// DueNotifications lists up to limit pending notifications of partition p
// whose next attempt is due at now.
func (v *Views) DueNotifications(p int32, now time.Time, limit int) (out []domain.Notification, err error) {
	prefix := duePrefix(p)
	err = v.due.scan(p, func(floor int64) (int64, error) {
		first := int64(math.MaxInt64)
		var from []byte
		if floor > 0 {
			from = binary.BigEndian.AppendUint64(append([]byte{}, prefix...), uint64(floor))
		}
		err := scan(v.db, prefix, from, func(k, _ []byte) (bool, error) {
			if len(k) < len(prefix)+8 {
				return true, nil
			}
			at := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			first = min(first, at)
			if len(out) >= limit || at > now.UnixNano() {
				return false, nil
			}
			rest := string(k[len(prefix)+9:]) // skip "/"
			org, id, ok := strings.Cut(rest, "/")
			if !ok {
				return true, nil
			}
			n, err := v.Notification(org, id)
			if err != nil {
				return false, err
			}
			out = append(out, n)
			return true, nil
		})
		return first, err
	})
	return out, err
}

// Endpoints lists org's webhook endpoints.
func (v *Views) Endpoints(org string) ([]domain.Endpoint, error) {
	return scanEndpoints(v.db, org)
}

// Endpoint returns one webhook endpoint of org.
func (v *Views) Endpoint(org, id string) (domain.Endpoint, error) {
	var e domain.Endpoint
	found, err := getView(v.db, endpointKey(org, id), &e)
	if err == nil && !found {
		err = ErrNotFound
	}
	return e, err
}

// EndpointNotifications lists an endpoint's notifications.
func (v *Views) EndpointNotifications(org, id string) ([]domain.Notification, error) {
	return v.notificationsUnder(org, endpointNotifPrefix(org, id))
}

// LastNotification returns the newest notification about a subject (a job
// id, or "<document>/<attempt>"), or a batch's newest when batch is true.
func (v *Views) LastNotification(org, subject string, batch bool) (domain.Notification, bool) {
	prefix := subjectNotifPrefix(org, subject)
	if batch {
		prefix = batchNotifPrefix(org, subject)
	}
	var newest domain.Notification
	_ = scan(v.db, prefix, nil, func(k, _ []byte) (bool, error) {
		if n, err := v.Notification(org, string(k[len(prefix):])); err == nil && n.CreatedAt.After(newest.CreatedAt) {
			newest = n
		}
		return true, nil
	})
	return newest, newest.ID != ""
}
