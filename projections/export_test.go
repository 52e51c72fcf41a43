package projections

// WithKeyFilterLimit bounds the views' key filter (0: none at all), so the
// shared tests can check that neither it nor its turning off changes a
// byte.
func WithKeyFilterLimit(limit int) Option {
	return func(v *Views) { v.filterLimit = limit }
}

// KeyFilterKeys is how many keys the key filter has counted.
func (v *Views) KeyFilterKeys() int { return v.written.keys }
