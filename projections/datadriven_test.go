package projections_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
	"github.com/docket/docket/eventstore"
	"github.com/docket/docket/projections"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of projections/testdata/*.txt")

// The files in testdata are sequences of directives, each
//
//	<command> [key=value ...]
//	<input lines>
//	----
//	<expected output lines>
//	<blank line>
//
// Lines starting with '#' between directives (or inside input) are comments.
// Every file starts with fresh, empty views. Commands:
//
//	apply [partition=N] [offset=N]   input: one event per line, applied as ONE
//	                                 fetch at consecutive offsets of the partition
//	                                 (offset= rewinds, to re-deliver a fetch).
//	                                 Output: each refused event, then offsets.
//	show                             input: one query per line; output: each
//	                                 query followed by its indented result.
//	restart                          close and reopen the views directory.
//
// Events (at=N is seconds after 2026-01-01T00:00:00Z; values may be "quoted"):
//
//	org          org= name= at=
//	key-issue    org= key= hash= [label=] at=
//	key-revoke   org= key= at=
//	upload       org= doc= [batch=] [file=] [type=] [size=] [ref=] at=
//	queue        org= doc= attempt= [phase=full] [force=true] [jobs=j1,j2] at=
//	claim        org= doc= attempt= claim= [phase=full] [worker=] at=
//	preprocess   org= doc= claim= [type=] [pages=] [chars=] at=
//	succeed      org= doc= claim= [currency=] [item=desc:qty:unit:amount ...] at=
//	fail         org= doc= claim= code= [phase=] [msg=] [retryable=] at=
//	cancel       org= doc= [reason=] at=
//	delete-batch org= batch= at=
//	idem-claim   org= key= hash= claim= at=
//	idem-complete org= key= claim= status= [body=] at=
//	idem-release org= key= claim= at=
//	job-create   org= job= docs=d1,d2 [kind=preprocess] [session=] at=
//	job-cancel   org= job= at=
//	job-complete org= job= status= [generation=0] [done=] [total=] [failed=] at=
//	webhook-set  org= batch= url= secret= at=
//	undecodable                      a record whose value could not be decoded
//
// Queries:
//
//	document <org> <id>
//	batch <org> <name>
//	batches <org> limit=N [after=<name>]        walks every page
//	batch-docs <org> <name> limit=N [cursor=]   walks every page
//	org <id> | key <hash> | idem <org> <key> | noops | offsets
//	history document|batch|job <org> <id> [limit=N]   walks every page
//	as-of document|batch|job <org> <id> at=N          the entity then
func TestDataDriven(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			runFile(t, file)
		})
	}
}

// directive is one command of a testdata file.
type directive struct {
	line     int      // 1-based line of the command
	before   []string // comments and blank lines preceding it
	cmd      string
	input    []string // raw input lines, comments included
	expected []string
}

func parseFile(t *testing.T, file string) (ds []directive, trailer []string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var pending []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pending = append(pending, l)
			i++
			continue
		}
		d := directive{line: i + 1, before: pending, cmd: l}
		pending = nil
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			if strings.TrimSpace(lines[i]) == "" {
				t.Fatalf("%s:%d: blank line before ---- (directive at line %d)", file, i+1, d.line)
			}
			d.input = append(d.input, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: directive without ----", file, d.line)
		}
		for i++; i < len(lines) && lines[i] != ""; i++ {
			d.expected = append(d.expected, strings.TrimRight(lines[i], " \t"))
		}
		ds = append(ds, d)
	}
	return ds, pending
}

func runFile(t *testing.T, file string) {
	ds, trailer := parseFile(t, file)
	noops := &noopLog{}
	logger := zerolog.New(noops).Level(zerolog.DebugLevel)
	r := &runner{t: t, file: file, f: setup(t, projections.WithLogger(logger)), noops: noops, log: newLog()}
	var out strings.Builder
	for _, d := range ds {
		r.line = d.line
		got := r.run(d)
		for i := range got {
			got[i] = strings.TrimRight(got[i], " \t")
		}
		if *rewrite {
			blank := false
			for _, l := range d.before {
				if strings.TrimSpace(l) == "" {
					if blank {
						continue // collapse runs of blank lines
					}
					l = ""
				}
				blank = strings.TrimSpace(l) == ""
				out.WriteString(l + "\n")
			}
			out.WriteString(d.cmd + "\n")
			for _, l := range d.input {
				out.WriteString(l + "\n")
			}
			out.WriteString("----\n")
			for _, l := range got {
				out.WriteString(l + "\n")
			}
			continue
		}
		if !slices.Equal(got, d.expected) {
			t.Errorf("%s:%d: %s\nexpected:\n%s\ngot:\n%s", file, d.line, d.cmd,
				strings.Join(d.expected, "\n"), strings.Join(got, "\n"))
		}
	}
	if *rewrite {
		s := strings.TrimRight(out.String(), "\n") + "\n"
		for _, l := range trailer {
			if strings.TrimSpace(l) != "" {
				s += l + "\n"
			}
		}
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// noopLog collects the views' "recorded no-op" and "undecodable" messages.
type noopLog struct {
	mu    sync.Mutex
	lines []string
}

func (n *noopLog) Write(p []byte) (int, error) {
	var m struct {
		Message   string `json:"message"`
		Error     string `json:"error"`
		Type      string `json:"type"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	}
	if err := json.Unmarshal(p, &m); err != nil {
		return len(p), nil
	}
	var l string
	switch {
	case m.Message == "recorded no-op":
		l = fmt.Sprintf("noop %d/%d %s: %s", m.Partition, m.Offset, m.Type, m.Error)
	case strings.Contains(m.Message, "undecodable"):
		l = fmt.Sprintf("skipped %d/%d: %s", m.Partition, m.Offset, m.Error)
	default:
		return len(p), nil
	}
	n.mu.Lock()
	n.lines = append(n.lines, l)
	n.mu.Unlock()
	return len(p), nil
}

func (n *noopLog) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.lines
	n.lines = nil
	return out
}

type runner struct {
	t     *testing.T
	file  string
	line  int
	f     *fixture
	noops *noopLog
	log   *logBuilder
}

func (r *runner) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s:%d: %s", r.file, r.line, fmt.Sprintf(format, args...))
}

func (r *runner) run(d directive) []string {
	word, args := r.tokens(d.cmd)
	switch word {
	case "apply":
		p := int32(args.int("partition", 0))
		if args.has("offset") {
			r.log.next[p] = int64(args.int("offset", 0))
		}
		args.done(r)
		var recs []eventstore.Record
		for _, l := range d.input {
			if strings.HasPrefix(l, "#") {
				continue
			}
			recs = append(recs, r.record(p, l))
		}
		r.noops.take()
		if err := r.f.v.ApplyRecords(recs); err != nil {
			return []string{"error: " + err.Error()}
		}
		return append(r.noops.take(), "offsets: "+offsets(r.f.v.Offsets()))
	case "show":
		args.done(r)
		var out []string
		for _, l := range d.input {
			if strings.HasPrefix(l, "#") {
				continue
			}
			out = append(out, l)
			for _, res := range r.query(l) {
				out = append(out, "  "+res)
			}
		}
		return out
	case "restart":
		args.done(r)
		r.f.restart()
		return []string{"offsets: " + offsets(r.f.v.Offsets())}
	}
	r.fatalf("unknown command %q", word)
	return nil
}

func offsets(m map[int32]int64) string {
	if len(m) == 0 {
		return "-"
	}
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%d:%d", p, m[p]))
	}
	return strings.Join(parts, " ")
}

// args are the key=value arguments of a line; repeated keys keep every value.
type args struct {
	pos  []string
	kv   map[string][]string
	used map[string]bool
}

func (a *args) has(k string) bool { return len(a.kv[k]) > 0 }

func (a *args) str(k, def string) string {
	a.used[k] = true
	if v := a.kv[k]; len(v) > 0 {
		return v[0]
	}
	return def
}

func (a *args) all(k string) []string { a.used[k] = true; return a.kv[k] }

func (a *args) int(k string, def int) int {
	s := a.str(k, "")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("%s=%q is not an integer", k, s))
	}
	return n
}

func (a *args) bool(k string) bool { return a.str(k, "false") == "true" }

// done fails on arguments that nothing read: a typo must not pass silently.
func (a *args) done(r *runner) {
	r.t.Helper()
	for k := range a.kv {
		if !a.used[k] {
			r.fatalf("unknown argument %q", k)
		}
	}
}

// tokens splits a line into its first word and its arguments. Values may be
// double-quoted to hold spaces; inside quotes a backslash escapes the next
// character.
func (r *runner) tokens(line string) (string, *args) {
	r.t.Helper()
	var toks []string
	var cur strings.Builder
	inQuote, has, escaped := false, false, false
	for _, c := range line {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case c == '\\' && inQuote:
			escaped = true
		case c == '"':
			inQuote, has = !inQuote, true
		case c == ' ' && !inQuote:
			if has {
				toks = append(toks, cur.String())
			}
			cur.Reset()
			has = false
		default:
			cur.WriteRune(c)
			has = true
		}
	}
	if inQuote {
		r.fatalf("unterminated quote in %q", line)
	}
	if has {
		toks = append(toks, cur.String())
	}
	if len(toks) == 0 {
		r.fatalf("empty line")
	}
	a := &args{kv: map[string][]string{}, used: map[string]bool{}}
	for _, tok := range toks[1:] {
		if k, v, ok := strings.Cut(tok, "="); ok {
			a.kv[k] = append(a.kv[k], v)
		} else {
			a.pos = append(a.pos, tok)
		}
	}
	return toks[0], a
}

func (r *runner) record(p int32, line string) eventstore.Record {
	r.t.Helper()
	kind, a := r.tokens(line)
	if kind == "undecodable" {
		a.done(r)
		o := r.log.next[p]
		r.log.next[p]++
		return eventstore.Record{Position: eventstore.Position{Partition: p, Offset: o}, Timestamp: epoch,
			Err: errors.New("avro: unknown schema fingerprint")}
	}
	org := a.str("org", "")
	if org == "" || !a.has("at") {
		r.fatalf("%q: org= and at= are required", line)
	}
	m := domain.Meta{EventID: fmt.Sprintf("evt_%d_%d", p, r.log.next[p]), OrgID: org, OccurredAt: at(int64(a.int("at", 0))), Actor: "test"}
	need := func(k string) string {
		if !a.has(k) {
			r.fatalf("%q: %s= is required", line, k)
		}
		return a.str(k, "")
	}
	opt := func(k string) *string {
		if !a.has(k) {
			return nil
		}
		return strp(a.str(k, ""))
	}
	var e domain.Event
	switch kind {
	case "org":
		e = &domain.OrgCreated{Meta: m, Name: need("name")}
	case "key-issue":
		e = &domain.ApiKeyIssued{Meta: m, KeyID: need("key"), KeyHash: need("hash"), Label: a.str("label", "")}
	case "key-revoke":
		e = &domain.ApiKeyRevoked{Meta: m, KeyID: need("key")}
	case "upload":
		e = &domain.DocumentUploaded{Meta: m, DocumentID: need("doc"), BatchName: opt("batch"),
			FileName: a.str("file", "file.pdf"), ContentType: a.str("type", "application/pdf"),
			Size: int64(a.int("size", 100)), BlobKey: "blob/" + a.str("doc", ""), Reference: opt("ref")}
	case "queue":
		var jobs []string
		if j := a.str("jobs", ""); j != "" {
			jobs = strings.Split(j, ",")
		}
		e = &domain.DocumentQueued{Meta: m, DocumentID: need("doc"), Phase: a.str("phase", domain.PhaseFull),
			Attempt: a.int("attempt", -1), JobIDs: jobs, Force: a.bool("force")}
		need("attempt")
	case "claim":
		need("attempt")
		e = &domain.ProcessingStarted{Meta: m, DocumentID: need("doc"), Phase: a.str("phase", domain.PhaseFull),
			Attempt: a.int("attempt", -1), ClaimID: need("claim"), Worker: a.str("worker", "w1")}
	case "preprocess":
		e = &domain.DocumentPreprocessed{Meta: m, DocumentID: need("doc"), ClaimID: need("claim"),
			ContentType: a.str("type", "application/pdf"), Pages: a.int("pages", 1), TextChars: a.int("chars", 100)}
	case "succeed":
		items := []domain.LineItem{}
		for _, it := range a.all("item") {
			f := strings.Split(it, ":")
			if len(f) != 4 {
				r.fatalf("item=%q: want desc:qty:unit:amount", it)
			}
			var n [3]float64
			for i := range n {
				v, err := strconv.ParseFloat(f[i+1], 64)
				if err != nil {
					r.fatalf("item=%q: %v", it, err)
				}
				n[i] = v
			}
			items = append(items, domain.LineItem{Description: f[0], Quantity: n[0], UnitPrice: n[1], Amount: n[2]})
		}
		e = &domain.DocumentSucceeded{Meta: m, DocumentID: need("doc"), ClaimID: need("claim"), Currency: opt("currency"), LineItems: items}
	case "fail":
		e = &domain.DocumentFailed{Meta: m, DocumentID: need("doc"), ClaimID: need("claim"), Phase: a.str("phase", ""),
			Code: need("code"), Message: a.str("msg", ""), Retryable: a.bool("retryable")}
	case "cancel":
		e = &domain.DocumentCanceled{Meta: m, DocumentID: need("doc"), Reason: a.str("reason", "user")}
	case "delete-batch":
		e = &domain.BatchDeleted{Meta: m, BatchName: need("batch")}
	case "idem-claim":
		e = &domain.IdempotencyKeyClaimed{Meta: m, Key: need("key"), RequestHash: need("hash"), ClaimID: need("claim")}
	case "idem-complete":
		need("status")
		e = &domain.IdempotencyKeyCompleted{Meta: m, Key: need("key"), ClaimID: need("claim"), Status: a.int("status", 0), Body: []byte(a.str("body", ""))}
	case "idem-release":
		e = &domain.IdempotencyKeyReleased{Meta: m, Key: need("key"), ClaimID: need("claim")}
	default:
		if e = r.moreEvent(kind, a, m, need); e == nil {
			r.fatalf("unknown event %q", kind)
		}
	}
	a.done(r)
	return r.log.record(p, e)
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return strconv.FormatInt(int64(t.Sub(epoch)/time.Second), 10)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "(empty)"
	}
	return strings.Join(xs, " ")
}

func notFound(err error) []string {
	if errors.Is(err, projections.ErrNotFound) {
		return []string{"not found"}
	}
	return []string{"error: " + err.Error()}
}

func (r *runner) query(line string) []string {
	r.t.Helper()
	word, a := r.tokens(line)
	v := r.f.v
	pos := func(n int) {
		if len(a.pos) != n {
			r.fatalf("%q: want %d positional arguments", line, n)
		}
	}
	defer a.done(r)
	switch word {
	case "document":
		pos(2)
		d, err := v.Document(a.pos[0], a.pos[1])
		if err != nil {
			return notFound(err)
		}
		return showDocument(d)
	case "batch":
		pos(2)
		b, err := v.Batch(a.pos[0], a.pos[1])
		if err != nil {
			return notFound(err)
		}
		return []string{showBatch(b)}
	case "batches":
		pos(1)
		limit, after := a.int("limit", 10), a.str("after", "")
		var out []string
		seen := map[string]bool{}
		prev := after
		for page := 1; page <= 100; page++ {
			bs, next, err := v.Batches(a.pos[0], after, limit)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			names := make([]string, len(bs))
			for i, b := range bs {
				names[i] = b.Name
				if seen[b.Name] {
					out = append(out, "DUPLICATE "+b.Name)
				}
				if b.Name <= prev {
					out = append(out, "OUT OF ORDER "+b.Name)
				}
				seen[b.Name], prev = true, b.Name
			}
			out = append(out, fmt.Sprintf("page %d: %s next=%s", page, list(names), dash(next)))
			if next == "" {
				return out
			}
			after = next
		}
		return append(out, "too many pages")
	case "batch-docs":
		pos(2)
		limit, cursor := a.int("limit", 10), a.str("cursor", "")
		var out []string
		seen := map[string]bool{}
		for page := 1; page <= 100; page++ {
			docs, next, err := v.BatchDocuments(a.pos[0], a.pos[1], cursor, limit)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			ids := make([]string, len(docs))
			for i, d := range docs {
				ids[i] = d.ID
				if seen[d.ID] {
					out = append(out, "DUPLICATE "+d.ID)
				}
				seen[d.ID] = true
			}
			out = append(out, fmt.Sprintf("page %d: %s next=%s", page, list(ids), dash(next)))
			if next == "" {
				return out
			}
			cursor = next
		}
		return append(out, "too many pages")
	case "org":
		pos(1)
		o, err := v.Org(a.pos[0])
		if err != nil {
			return notFound(err)
		}
		return []string{fmt.Sprintf("id=%s name=%s created=%s", o.ID, o.Name, ts(o.CreatedAt))}
	case "key":
		pos(1)
		k, err := v.KeyByHash(a.pos[0])
		if err != nil {
			return notFound(err)
		}
		return []string{fmt.Sprintf("id=%s org=%s hash=%s label=%s revoked=%t", k.ID, k.OrgID, k.Hash, dash(k.Label), k.Revoked)}
	case "idem":
		pos(2)
		rec, err := v.Idempotency(a.pos[0], a.pos[1])
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		if rec.ClaimID == "" {
			return []string{"free"}
		}
		return []string{fmt.Sprintf("claim=%s hash=%s claimed=%s completed=%t status=%d body=%q",
			rec.ClaimID, rec.RequestHash, ts(rec.ClaimedAt), rec.Completed, rec.Status, rec.Body)}
	case "noops":
		pos(0)
		return []string{fmt.Sprintf("noops=%d", v.Noops())}
	case "offsets":
		pos(0)
		return []string{offsets(v.Offsets())}
	}
	if out, ok := r.historyQuery(word, a, line); ok {
		return out
	}
	r.fatalf("unknown query %q", word)
	return nil
}

func showDocument(d domain.Document) []string {
	out := []string{
		fmt.Sprintf("status=%s public=%s attempt=%d target=%s claim=%s created=%s started=%s completed=%s",
			d.Status, d.Status.BatchStatus(), d.Attempt, dash(d.Target), dash(d.ClaimID), ts(d.CreatedAt), ts(d.StartedAt), ts(d.CompletedAt)),
		fmt.Sprintf("batch=%s batch_deleted=%t file=%s type=%s pages=%d chars=%d jobs=%s",
			dash(d.BatchName), d.BatchDeleted, d.FileName, d.ContentType, d.Pages, d.TextChars, dash(strings.Join(d.JobIDs, ","))),
	}
	if d.Currency != "" || len(d.LineItems) > 0 {
		out = append(out, fmt.Sprintf("currency=%s items=%d", dash(d.Currency), len(d.LineItems)))
		for _, it := range d.LineItems {
			out = append(out, fmt.Sprintf("  item %q qty=%g unit=%g amount=%g", it.Description, it.Quantity, it.UnitPrice, it.Amount))
		}
	}
	if e := d.Error; e != nil {
		out = append(out, fmt.Sprintf("processing_error code=%s phase=%s retryable=%t message=%q", e.Code, dash(e.Phase), e.Retryable, e.Message))
	}
	return out
}

func showBatch(b domain.Batch) string {
	var counts []string
	for _, p := range domain.PublicStatuses {
		if n := b.Counts.Of(p); n != 0 {
			counts = append(counts, fmt.Sprintf("%s:%d", p, n))
		}
	}
	created, started, completed := b.Timestamps()
	return fmt.Sprintf("status=%s total=%d counts=%s all_done=%t created=%s started=%s completed=%s last_completion=%s",
		b.Status(), b.Documents, dash(strings.Join(counts, ",")), b.AllDone(), ts(created), ts(started), ts(completed), ts(b.CompletedAt))
}
