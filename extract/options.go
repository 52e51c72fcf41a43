package extract

// DefaultMaxPages is the page limit used when MaxPages is not given. It is
// far above any real invoice yet keeps a hostile or mistaken upload (a
// scanned book, say) from tying up a worker.
const DefaultMaxPages = 500

// Option configures Preprocess, in the functional-option style so that new
// settings can be added without breaking callers.
type Option func(*config)

type config struct {
	maxPages int
	// testHook, when set, runs inside the parsing goroutine before any
	// parser; tests use it to prove that panics are recovered.
	testHook func()
}

func newConfig(opts []Option) config {
	c := config{maxPages: DefaultMaxPages}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// MaxPages sets the largest page count Preprocess accepts; a PDF with more
// pages fails with CodeTooManyPages. The default is DefaultMaxPages (500).
// A value below 1 keeps the default, since a limit of zero pages would
// reject every document.
func MaxPages(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.maxPages = n
		}
	}
}

// withTestHook runs fn where a parser would run; only tests use it.
func withTestHook(fn func()) Option {
	return func(c *config) { c.testHook = fn }
}
