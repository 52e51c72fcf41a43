package main

import (
	"testing"
	"time"
)

// TestProduceLingerValidate: none and a few milliseconds are fine; a
// negative linger, or one long enough to look like a unit mistake (every
// append would wait that long), is refused with the flag's name.
func TestProduceLingerValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in  time.Duration
		err string
	}{
		{0, ""}, {time.Millisecond, ""}, {time.Second, ""},
		{-time.Millisecond, "--produce-linger"}, {time.Second + 1, "--produce-linger"},
	} {
		validated(t, tc.in.String(), func(c *Config) { c.ProduceLinger = tc.in }, tc.err)
	}
}
