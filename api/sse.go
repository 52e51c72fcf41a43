package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/docket/docket/eventstore"
)

// Live streams (Server-Sent Events) beside polling and webhooks:
//
//	GET /v1/batches/{batch_name}/events   event: batch, data: what GET /v1/batches/{batch_name} returns
//	GET /v1/jobs/{jobId}/events           event: job,   data: what GET /v1/jobs/{jobId} returns
//
// A stream opens with the current state and then sends the new state after
// every applied change of the log that alters it (never the same state twice
// in a row). Each event's id is "<partition>-<offset>": the org's partition
// and the next offset the node had applied when it read the state, so the
// state includes at least every event before that offset; ids never decrease
// within a stream.
//
// Resume: a client reconnecting with Last-Event-ID gets the current state
// first, whatever the id says. Every event is the whole state, and the
// current state supersedes whatever happened since the id, so a resumed
// stream never misses the latest state; the id is only checked for form.
//
// Terminal states do not end the stream: a batch can get new documents and
// a preprocess job can be reopened by a forced run. A stream ends when the
// client goes away, when the node shuts down (StopStreams), when the node
// drops a subscriber too slow to keep up (the client reconnects and
// resumes), or when the resource can no longer be read (batch deleted,
// handle expired): then a last "event: error" carries the error envelope a
// GET would return. A comment line ": keep-alive" is sent
// after sseKeepAlive without events, for proxies and dead-peer detection.

const (
	// sseKeepAlive is the longest silence on a stream.
	sseKeepAlive = 15 * time.Second
	// sseWriteWait bounds one write to a client that stopped reading.
	sseWriteWait = 30 * time.Second
	// sseBuffer is how many applied fetches a stream may lag behind before
	// it is dropped.
	sseBuffer = 256
)

// lastEventID is the form of the ids this API sends.
var lastEventID = regexp.MustCompile(`^[0-9]{1,10}-[0-9]{1,19}$`)

// sseState reads and renders the current state: the event name and the
// JSON a GET returns.
type sseState func() (event string, data []byte, err error)

func (s *Server) batchEvents(w http.ResponseWriter, r *http.Request) {
	name, ok := s.batchPath(w, r)
	if !ok {
		return
	}
	org := orgOf(r)
	s.serveEvents(w, r, func() (string, []byte, error) {
		b, err := s.views.Batch(org, name)
		if err != nil {
			return "", nil, err
		}
		data, err := sseJSON(renderBatch(b))
		return "batch", data, err
	})
}

func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request) {
	handle := mux.Vars(r)["jobId"]
	expand := r.URL.Query().Get("expand") == "documents"
	s.serveEvents(w, r, func() (string, []byte, error) {
		// Resolved afresh for every state: it verifies the handle (expiry
		// included) and loads what it names, exactly as getJob does.
		h, j, d, err := s.resolveJob(r)
		if err != nil {
			return "", nil, err
		}
		var v any
		if h.Kind == HandleKindDocumentPreprocess {
			_, attempt, _ := splitRunSubject(h.Subject)
			run, _ := d.Run(attempt)
			v = s.renderRun(handle, h, d, run)
		} else {
			v = s.renderJob(r, handle, h, j, expand)
		}
		data, err := sseJSON(v)
		return "job", data, err
	})
}

// streamStops holds, per Server, the channel StopStreams closes. It lives
// beside Server, whose fields are in server.go.
var streamStops sync.Map // *Server -> chan struct{}

func (s *Server) streamsStopped() <-chan struct{} {
	ch, _ := streamStops.LoadOrStore(s, make(chan struct{}))
	return ch.(chan struct{})
}

// StopStreams ends every open event stream. A stream otherwise ends only
// when its client leaves, and http.Server.Shutdown waits for handlers, so
// the node calls it as the HTTP server shuts down (RegisterOnShutdown);
// clients reconnect to another node with Last-Event-ID.
func (s *Server) StopStreams() {
	if ch, ok := streamStops.LoadAndDelete(s); ok {
		close(ch.(chan struct{}))
	}
}

// serveEvents runs one stream of the state read returns.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, read sseState) {
	org := orgOf(r)
	var partition int32
	if s.store != nil {
		partition = s.store.PartitionFor(org)
	}
	// Subscribe before the first read, so no change falls between them.
	stopped := s.streamsStopped()
	updates, cancel := s.views.Subscribe(sseBuffer)
	defer cancel()

	offset := s.views.Offsets()[partition] // before the read: the state is at least this new
	event, data, err := read()
	if err != nil {
		writeError(w, r, err)
		return
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		// The current state supersedes everything since id; see above.
		logger(r).Debug().Str("last_event_id", id).Bool("well_formed", lastEventID.MatchString(id)).Msg("sse: resume")
	}

	rc := http.NewResponseController(unwrapWriter(w))
	// The stream outlives the server's read and write timeouts: no read
	// deadline (a timeout there would cancel the request), and a write
	// deadline per write instead of one for the whole response.
	_ = rc.SetReadDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no")
	hd.Del("Content-Length")
	w.WriteHeader(http.StatusOK)

	var buf bytes.Buffer
	send := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteWait))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		buf.Reset()
		return rc.Flush()
	}
	sentOffset, sent := offset, data
	writeEvent(&buf, event, partition, offset, data)
	if err := send(); err != nil {
		return
	}

	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	for {
		var recs []eventstore.Record
		var ok bool
		select {
		case <-r.Context().Done():
			return
		case <-stopped:
			return
		case <-keepAlive.C:
			buf.WriteString(": keep-alive\n\n")
			if send() != nil {
				return
			}
			continue
		case recs, ok = <-updates:
		}
		if !ok {
			return // dropped: too slow; the client resumes
		}
		concerns := concernsOrg(recs, org)
		// Take whatever else is already waiting: one read serves them all.
	drain:
		for {
			select {
			case more, ok := <-updates:
				if !ok {
					return
				}
				concerns = concerns || concernsOrg(more, org)
			default:
				break drain
			}
		}
		if !concerns {
			continue
		}
		offset := s.views.Offsets()[partition]
		event, data, err := read()
		if err != nil {
			status, body := errorResponse(err, requestID(r))
			if status == http.StatusInternalServerError {
				logger(r).Error().Err(err).Msg("sse: read state")
			}
			if js, jerr := sseJSON(body); jerr == nil {
				writeEvent(&buf, "error", partition, offset, js)
				_ = send()
			}
			return
		}
		if bytes.Equal(data, sent) {
			continue
		}
		if offset <= sentOffset {
			// The change is committed but its fetch's offsets are not yet
			// published; that fetch's notification follows and sends it
			// with an id that moved on.
			continue
		}
		writeEvent(&buf, event, partition, offset, data)
		if send() != nil {
			return
		}
		sentOffset, sent = offset, data
		keepAlive.Reset(sseKeepAlive)
	}
}

// concernsOrg reports whether a fetch holds an event of org: only those can
// change one of org's batches or jobs, and the state comparison decides.
func concernsOrg(recs []eventstore.Record, org string) bool {
	for _, rec := range recs {
		if rec.Err == nil && rec.Event != nil && rec.Event.Header().OrgID == org {
			return true
		}
	}
	return false
}

// writeEvent appends one event. data is one line of JSON.
func writeEvent(buf *bytes.Buffer, event string, partition int32, offset int64, data []byte) {
	buf.WriteString("event: ")
	buf.WriteString(event)
	buf.WriteString("\nid: ")
	buf.WriteString(strconv.FormatInt(int64(partition), 10))
	buf.WriteByte('-')
	buf.WriteString(strconv.FormatInt(offset, 10))
	buf.WriteString("\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
}

// sseJSON encodes v as writeJSON does, on one line.
func sseJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// unwrapWriter looks through the access-log wrapper, which does not
// implement Unwrap, so the ResponseController reaches the connection's
// Flush and deadlines. Status and bytes still go through w.
func unwrapWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		switch x := w.(type) {
		case *statusWriter:
			w = x.ResponseWriter
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return w
		}
	}
}
