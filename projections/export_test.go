package projections

// WithWrittenSet makes views remember the keys they write, as a rebuild's
// do, so the shared tests can check that it changes nothing.
func WithWrittenSet(limit int) Option {
	return func(v *Views) { v.written = newWrittenSet(limit) }
}
