package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var errNotFound = errors.New("bench: 404")

// benchClient drives the lifecycle through the HTTP API: upload, register
// the batch's webhook (pointing at the bench's own receiver), process.
type benchClient struct {
	base, key string
	hookURL   string        // "" without webhooks
	idle      chan *rawConn // kept-alive connections to base, free for a call
	tr        atomic.Pointer[tracker]
	uploads   hist
	next      atomic.Int64 // document numbers, unique over the whole run
	lastDoc   atomic.Value // string: a recently uploaded document, for GETs
}

// batch uploads n documents into a fresh batch and processes it.
func (c *benchClient) batch(ctx context.Context, n int) error {
	first := int(c.next.Add(int64(n))) - n
	name := fmt.Sprintf("bench-%d", first)
	tr := c.tr.Load()
	for i := first; i < first+n; i++ {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", fmt.Sprintf("bench-%d.txt", i))
		_, _ = fw.Write(textInvoiceFor(i))
		_ = mw.Close()
		t0 := time.Now()
		var doc struct {
			ID string `json:"id"`
		}
		if err := c.call(ctx, "POST", "/v1/batches/"+name+"/documents", buf.Bytes(), mw.FormDataContentType(), http.StatusCreated, &doc); err != nil {
			return err
		}
		c.uploads.add(time.Since(t0))
		tr.started(doc.ID, t0)
		c.lastDoc.Store(doc.ID)
	}
	if c.hookURL != "" {
		body := fmt.Sprintf(`{"url":%q}`, c.hookURL+"/"+name)
		// An upload is acknowledged once appended; if the views are slower
		// than the API's write wait the batch is not visible yet (404):
		// the bench waits for it as a client would. Up to viewsLagLimit:
		// until 2026-12-05 it gave up after about 2 s, and an open loop
		// near saturation, where the views fall seconds behind, failed
		// instead of reporting its latency.
		start := time.Now()
		for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			err := c.call(ctx, "PUT", "/v1/batches/"+name+"/webhook", []byte(body), "application/json", http.StatusOK, nil)
			if err == nil {
				break
			}
			if !errors.Is(err, errNotFound) || time.Since(start) >= viewsLagLimit {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	return c.call(ctx, "POST", "/v1/batches/"+name+"/process", nil, "", http.StatusAccepted, nil)
}

// viewsLagLimit is how long a bench client waits for its batch to appear
// in the views after the upload was acknowledged.
const viewsLagLimit = 30 * time.Second

// call sends one request and checks its status. ctx is checked before it
// is sent; a call in flight ends with its answer or after callTimeout.
func (c *benchClient) call(ctx context.Context, method, path string, body []byte, ct string, want int, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	addr := strings.TrimPrefix(c.base, "http://")
	req := make([]byte, 0, 256+len(body))
	req = append(append(append(append(req, method...), ' '), path...), " HTTP/1.1\r\nHost: "...)
	req = append(append(append(append(req, addr...), "\r\nAuthorization: Bearer "...), c.key...), "\r\n"...)
	if ct != "" {
		req = append(append(append(req, "Content-Type: "...), ct...), "\r\n"...)
	}
	req = strconv.AppendInt(append(req, "Content-Length: "...), int64(len(body)), 10)
	req = append(append(req, "\r\nUser-Agent: docket-bench\r\n\r\n"...), body...)
	conn := c.conn(addr)
	var raw []byte
	status, err := conn.do(req, &raw)
	c.release(conn)
	if err != nil {
		return fmt.Errorf("bench: %s %s: %w", method, path, err)
	}
	if status == http.StatusNotFound && want != http.StatusNotFound {
		return fmt.Errorf("%w: %s %s: %s", errNotFound, method, path, raw)
	}
	if status != want {
		return fmt.Errorf("bench: %s %s: %d %s", method, path, status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// callTimeout is how long one of the lifecycle client's calls may take, as
// the http.Client it used before allowed.
const callTimeout = time.Minute

// conn takes an idle connection to addr, or a new one.
func (c *benchClient) conn(addr string) *rawConn {
	select {
	case rc := <-c.idle:
		return rc
	default:
		return &rawConn{addr: addr, timeout: callTimeout}
	}
}

// release keeps a connection that is still open for the next call, up to
// the free list's size.
func (c *benchClient) release(rc *rawConn) {
	if rc.c == nil {
		return
	}
	select {
	case c.idle <- rc:
	default:
		rc.close()
	}
}

// closeIdle closes the connections the client keeps.
func (c *benchClient) closeIdle() {
	for {
		select {
		case rc := <-c.idle:
			rc.close()
		default:
			return
		}
	}
}

// newBenchClient makes a client that keeps up to idle connections alive.
func newBenchClient(idle int) *benchClient { return &benchClient{idle: make(chan *rawConn, idle)} }

// closedLoop runs conc clients until docs documents have been uploaded.
func (c *benchClient) closedLoop(ctx context.Context, docs, conc, batchSize int) error {
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	left := atomic.Int64{}
	left.Store(int64(docs / batchSize))
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 && ctx.Err() == nil {
				if err := c.batch(ctx, batchSize); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// openLoop starts a batch every batchSize/rate seconds, whatever the state
// of the earlier ones, until docs documents (docs > 0) or until d has passed.
// It returns the number of documents started.
func (c *benchClient) openLoop(ctx context.Context, rate float64, docs int, d time.Duration, batchSize int) (int, error) {
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	every := time.Duration(float64(time.Second) * float64(batchSize) / rate)
	start := time.Now()
	n := 0
	for i := 0; ; i++ {
		if (docs > 0 && n >= docs) || (docs <= 0 && time.Since(start) >= d) || ctx.Err() != nil {
			break
		}
		if wait := time.Until(start.Add(time.Duration(i) * every)); wait > 0 {
			time.Sleep(wait)
		}
		n += batchSize
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.batch(ctx, batchSize); err != nil {
				once.Do(func() { firstErr = err })
			}
		}()
	}
	wg.Wait()
	return n, firstErr
}

// hookReceiver is the loopback HTTP server the node delivers batch.completed
// webhooks to; the batch name is the last path segment.
type hookReceiver struct {
	srv *http.Server
	url string
}

func startHookReceiver(c *benchClient) (*hookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hookReceiver{url: "http://" + ln.Addr().String() + "/hook"}
	h.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		var batch string
		if i := bytes.LastIndexByte([]byte(r.URL.Path), '/'); i >= 0 {
			batch = r.URL.Path[i+1:]
		}
		if tr := c.tr.Load(); tr != nil {
			tr.notify(batch, at)
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *hookReceiver) close() { _ = h.srv.Close() }

// textInvoiceFor is the small plain-text invoice the benchmark uploads.
func textInvoiceFor(i int) []byte {
	return fmt.Appendf(nil, "INVOICE #%d\nBill to: Bench Co\n\nDescription          Qty   Unit Price   Amount\nWidget model %d        2      %d.50      %d.00\nService fee            1      10.00      10.00\n\nTotal: %d.00 USD\n",
		i, i, 10+i, 2*(10+i)+1, 2*(10+i)+11)
}
