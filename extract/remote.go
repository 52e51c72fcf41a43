package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Remote sends documents to an external extraction service over HTTP, for
// teams with their own models. The contract (also in README, "Extraction"):
//
//	POST <url>
//	Content-Type: application/json
//	{"file_name": "inv.pdf", "content_type": "application/pdf", "num_pages": 2,
//	 "text": "<laid-out text, pages separated by \f; may be empty for scans when OCR is not installed>",
//	 "data": "<the upload, base64>"}
//
//	200 OK
//	{"currency": "EUR" | null,
//	 "line_items": [{"description": "...", "quantity": 2, "unit_price": 12.5, "amount": 25}]}
//
//	422 (the document cannot be extracted; not retried)
//	{"error": {"code": "corrupt_document", "message": "..."}}
//
// A 5xx, 408 or 429 answer, a refused connection or an attempt that takes
// longer than the per-attempt timeout is retried with exponential backoff
// (200 ms, 400 ms, ...) up to the retry limit, within the document's own
// deadline. When the retries are spent the document fails with
// internal_error (which the worker may retry later); when the document's
// deadline passes, with timeout. An answer that breaks the contract (not
// JSON, a 200 without line_items, an item without a finite amount, an
// unknown error code, any other status) fails with internal_error and is
// not retried: asking again gets the same answer.
type Remote struct {
	url     string
	client  *http.Client
	timeout time.Duration
	retries int
	backoff time.Duration
}

// RemoteOption configures a Remote.
type RemoteOption func(*Remote)

// RemoteTimeout bounds one attempt. Default 30 s.
func RemoteTimeout(d time.Duration) RemoteOption { return func(r *Remote) { r.timeout = d } }

// RemoteRetries is how many times a failed attempt is repeated. Default 3.
func RemoteRetries(n int) RemoteOption { return func(r *Remote) { r.retries = max(0, n) } }

// RemoteBackoff is the wait before the first retry; it doubles each time.
// Default 200 ms.
func RemoteBackoff(d time.Duration) RemoteOption { return func(r *Remote) { r.backoff = d } }

// RemoteClient sets the HTTP client. Default: a client of its own with no
// overall timeout (RemoteTimeout bounds each attempt).
func RemoteClient(c *http.Client) RemoteOption { return func(r *Remote) { r.client = c } }

// ErrRemoteURL is returned by NewRemote for a URL that is not http(s).
var ErrRemoteURL = errors.New("extract: extractor URL must be http:// or https:// with a host")

// NewRemote makes a Remote for an http or https URL.
func NewRemote(rawURL string, opts ...RemoteOption) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %q", ErrRemoteURL, rawURL)
	}
	r := &Remote{url: rawURL, client: &http.Client{}, timeout: 30 * time.Second, retries: 3, backoff: 200 * time.Millisecond}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

type remoteRequest struct {
	FileName    string `json:"file_name"`
	ContentType string `json:"content_type"`
	NumPages    int    `json:"num_pages"`
	Text        string `json:"text"`
	Data        []byte `json:"data"`
}

type remoteItem struct {
	Description *string  `json:"description"`
	Quantity    *float64 `json:"quantity"`
	UnitPrice   *float64 `json:"unit_price"`
	Amount      *float64 `json:"amount"`
}

type remoteResponse struct {
	Currency  *string       `json:"currency"`
	LineItems *[]remoteItem `json:"line_items"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// maxRemoteResponse caps the answer read: a thousand items are a few
// hundred kilobytes.
const maxRemoteResponse = 8 << 20

// ExtractItems posts the document and returns the service's items.
func (r *Remote) ExtractItems(ctx context.Context, in Input) (*Invoice, error) {
	if in.Doc == nil {
		return nil, newError(CodeInternal, nil, "nil document")
	}
	body, err := json.Marshal(remoteRequest{FileName: in.FileName, ContentType: in.Doc.ContentType, NumPages: in.Doc.Pages, Text: in.Doc.Text, Data: in.Data})
	if err != nil {
		return nil, newError(CodeInternal, err, "extractor request")
	}
	wait := r.backoff
	var last error
	for attempt := 0; attempt <= r.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctxError(ctx.Err())
			case <-time.After(wait):
			}
			wait *= 2
		}
		inv, retry, err := r.attempt(ctx, body)
		if err == nil {
			return inv, nil
		}
		if ctx.Err() != nil {
			return nil, ctxError(ctx.Err())
		}
		if !retry {
			return nil, err
		}
		last = err
	}
	return nil, newError(CodeInternal, last, "extractor failed after %d attempts", r.retries+1)
}

// attempt makes one request; retry says whether another attempt may help.
func (r *Remote) attempt(ctx context.Context, body []byte) (inv *Invoice, retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return nil, false, newError(CodeInternal, err, "extractor request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, true, fmt.Errorf("extract: extractor unreachable: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteResponse+1))
	if err != nil {
		return nil, true, fmt.Errorf("extract: extractor answer cut off: %w", err)
	}
	switch {
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
		return nil, true, fmt.Errorf("extract: extractor answered %d", resp.StatusCode)
	case len(raw) > maxRemoteResponse:
		return nil, false, newError(CodeInternal, nil, "extractor answer over %d bytes", maxRemoteResponse)
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return nil, false, remoteFailure(raw)
	case resp.StatusCode != http.StatusOK:
		return nil, false, newError(CodeInternal, nil, "extractor answered %d", resp.StatusCode)
	}
	inv, err = parseRemote(raw)
	return inv, false, err
}

// remoteFailure turns a 422 body into the document's outcome. Only the
// codes that describe the document are accepted from a service; anything
// else is the service's own trouble.
func remoteFailure(raw []byte) error {
	var resp remoteResponse
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Error == nil {
		return newError(CodeInternal, err, "extractor answered 422 without an error object")
	}
	switch resp.Error.Code {
	case CodeUnsupportedFormat, CodeCorruptDocument, CodeEmptyDocument, CodeTooManyPages:
		return newError(resp.Error.Code, nil, "extractor: %s", resp.Error.Message)
	}
	return newError(CodeInternal, nil, "extractor answered 422 with code %q: %s", resp.Error.Code, resp.Error.Message)
}

// parseRemote checks a 200 body against the contract.
func parseRemote(raw []byte) (*Invoice, error) {
	var resp remoteResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, newError(CodeInternal, err, "extractor answer is not the documented JSON")
	}
	if resp.LineItems == nil {
		return nil, newError(CodeInternal, nil, "extractor answer has no line_items")
	}
	inv := &Invoice{Items: make([]Item, 0, len(*resp.LineItems))}
	if resp.Currency != nil {
		c := strings.ToUpper(strings.TrimSpace(*resp.Currency))
		if len(c) != 3 || strings.IndexFunc(c, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
			return nil, newError(CodeInternal, nil, "extractor currency %q is not an ISO 4217 code", *resp.Currency)
		}
		inv.Currency = c
	}
	for i, it := range *resp.LineItems {
		if it.Amount == nil || !finite(*it.Amount) {
			return nil, newError(CodeInternal, nil, "extractor item %d has no amount", i)
		}
		out := Item{Amount: *it.Amount}
		if it.Description != nil {
			out.Description = collapseSpace(*it.Description)
		}
		if it.Quantity != nil && finite(*it.Quantity) {
			out.Quantity = *it.Quantity
		}
		if it.UnitPrice != nil && finite(*it.UnitPrice) {
			out.UnitPrice = *it.UnitPrice
		}
		inv.Items = append(inv.Items, out)
	}
	return inv, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
