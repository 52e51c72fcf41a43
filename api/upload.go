package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/docket/docket/blobstore"
	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
)

// upload is a parsed multipart upload whose bytes are already stored.
type upload struct {
	blob        blobstore.Blob
	fileName    string
	contentType string
	reference   string
}

// readUpload streams the multipart body: the "file" part goes straight into
// the blob store (content-addressed, so a failed request leaves at most an
// unreferenced blob and never a half-written one); "reference" is small text.
func (s *Server) readUpload(r *http.Request, w http.ResponseWriter) (upload, error) {
	var up upload
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return up, fmt.Errorf("%w: send multipart/form-data with a \"file\" part", ErrUnsupportedMedia)
	}
	// The body may exceed the document by the multipart framing and the
	// reference; past that the request is cut off.
	body := &closeWatcher{r: http.MaxBytesReader(w, r.Body, s.cfg.MaxUpload+64<<10), delim: []byte("\n--" + params["boundary"] + "--")}
	r.Body = struct {
		io.Reader
		io.Closer
	}{body, r.Body}
	mr, err := r.MultipartReader()
	if err != nil {
		return up, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	gotFile, gotRef := false, false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			// NextPart also answers io.EOF for a body cut short (in a
			// delimiter or a part's headers): only a body that carried its
			// close delimiter is complete.
			if !body.closed {
				return up, fmt.Errorf("%w: truncated multipart body (no close delimiter)", ErrInvalid)
			}
			break
		}
		if err != nil {
			return up, bodyError(err)
		}
		switch part.FormName() {
		case "file":
			if gotFile {
				return up, fmt.Errorf("%w: more than one \"file\" part", ErrInvalid)
			}
			gotFile = true
			up.fileName = cleanFileName(part.FileName())
			up.contentType = part.Header.Get("Content-Type")
			if _, _, err := mime.ParseMediaType(up.contentType); err != nil {
				up.contentType = "application/octet-stream"
			}
			body := &readTracker{r: part}
			up.blob, err = s.blobs.Put(r.Context(), body)
			if err != nil {
				return up, storeError(r, body.err, err)
			}
		case "reference":
			if gotRef {
				return up, fmt.Errorf("%w: more than one \"reference\" part", ErrInvalid)
			}
			gotRef = true
			b, err := io.ReadAll(io.LimitReader(part, 4<<10))
			if err != nil {
				return up, bodyError(err)
			}
			up.reference = string(b)
			if err := domain.ValidateReference(up.reference); err != nil {
				return up, err
			}
		default:
			return up, fmt.Errorf("%w: unexpected form field %q (expected \"file\" and optional \"reference\")", ErrInvalid, part.FormName())
		}
		part.Close()
	}
	if !gotFile {
		return up, fmt.Errorf("%w: the \"file\" part is missing", ErrInvalid)
	}
	return up, nil
}

// closeWatcher passes a multipart body through and notes whether its close
// delimiter went by, which tells a complete body from one cut short.
type closeWatcher struct {
	r      io.Reader
	delim  []byte
	tail   []byte // the last len(delim)-1 bytes, for a delimiter across reads
	closed bool
}

func (c *closeWatcher) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if !c.closed && n > 0 {
		k := len(c.delim) - 1
		joint := append(c.tail, p[:min(n, k)]...)
		c.closed = bytes.Contains(joint, c.delim) || bytes.Contains(p[:n], c.delim)
		if n >= k {
			c.tail = append(c.tail[:0], p[n-k:n]...)
		} else {
			c.tail = append(c.tail[:0], joint[max(0, len(joint)-k):]...)
		}
	}
	return n, err
}

// readTracker remembers the error reading the request body, so that a
// failed Put can be told apart: the client's body (4xx) or the store (5xx).
type readTracker struct {
	r   io.Reader
	err error
}

func (t *readTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

// storeError classifies a failed blob Put. A body that could not be read is
// the client's fault; otherwise the store failed (disk, S3), which is ours
// and temporary: 503, so the client retries and its Idempotency-Key is
// released. The store's error (paths, endpoints) goes to the log only.
func storeError(r *http.Request, readErr, err error) error {
	if readErr != nil || blobstore.IsClientError(err) {
		return bodyError(err)
	}
	logger(r).Error().Err(err).Msg("blob store failed to store an upload")
	return fmt.Errorf("%w: the document store failed; retry later", ErrUnavailable)
}

// bodyError classifies a failure while reading the body.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	case blobstore.IsClientError(err):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, multipart.ErrMessageTooLarge):
		return fmt.Errorf("%w: truncated or malformed multipart body", ErrInvalid)
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %w", ErrRequestTimeout, err)
	}
	return fmt.Errorf("%w: reading body: %w", ErrInvalid, err)
}

// cleanFileName keeps the last path element of a client-supplied name and
// drops anything that is not printable UTF-8.
func cleanFileName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	name = path.Base(name)
	if !utf8.ValidString(name) {
		name = strings.ToValidUTF8(name, "")
	}
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	if name == "." || name == ".." || name == "/" || name == "" {
		name = "document"
	}
	if len(name) > 255 {
		name = name[:255]
		name = strings.ToValidUTF8(name, "")
	}
	return name
}

func (s *Server) uploadToBatch(w http.ResponseWriter, r *http.Request) {
	name, err := batchName(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	up, err := s.readUpload(r, w)
	if err != nil {
		writeError(w, r, err)
		return
	}
	fp := strings.Join([]string{name, up.blob.Key, up.fileName, up.contentType, up.reference}, "\x00")
	s.idempotent(w, r, fp, func() (result, error) {
		ev := &domain.DocumentUploaded{
			Meta: s.meta(r), DocumentID: eventstore.NewID("doc_"), BatchName: &name, FileName: up.fileName,
			ContentType: up.contentType, Size: up.blob.Size, BlobKey: up.blob.Key, Reference: optional(up.reference),
		}
		annotate(r, "document", ev.DocumentID)
		pos, err := s.append(r.Context(), ev)
		if err != nil {
			return result{}, err
		}
		if err := s.wait(r.Context(), pos); err == nil {
			if d, err := s.views.Document(orgOf(r), ev.DocumentID); err == nil {
				return result{http.StatusCreated, renderDocument(d)}, nil
			}
		}
		// Accepted but not yet visible here: answer from the event itself.
		d, _ := domain.Document{}.Apply(ev)
		return result{http.StatusCreated, renderDocument(d)}, nil
	})
}

// uploadDocument is POST /v1/documents: an upload outside any batch, for the
// jobs surface.
func (s *Server) uploadDocument(w http.ResponseWriter, r *http.Request) {
	up, err := s.readUpload(r, w)
	if err != nil {
		writeError(w, r, err)
		return
	}
	fp := strings.Join([]string{up.blob.Key, up.fileName, up.contentType, up.reference}, "\x00")
	s.idempotent(w, r, fp, func() (result, error) {
		ev := &domain.DocumentUploaded{
			Meta: s.meta(r), DocumentID: eventstore.NewID("doc_"), FileName: up.fileName,
			ContentType: up.contentType, Size: up.blob.Size, BlobKey: up.blob.Key, Reference: optional(up.reference),
		}
		annotate(r, "document", ev.DocumentID)
		if err := s.appendAccepted(r.Context(), ev); err != nil {
			return result{}, err
		}
		return result{http.StatusCreated, map[string]any{
			"documentId": ev.DocumentID, "fileName": ev.FileName, "contentType": ev.ContentType,
			"size": ev.Size, "reference": ev.Reference, "createdAt": ts(ev.Meta.OccurredAt),
		}}, nil
	})
}
