package main

import (
	"strings"
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
		err bool
	}{
		{0, false}, {time.Millisecond, false}, {time.Second, false},
		{-time.Millisecond, true}, {time.Second + 1, true},
	} {
		cfg := testConfig(t)
		cfg.ProduceLinger = tc.in
		err := cfg.Validate()
		if tc.err != (err != nil) || err != nil && !strings.Contains(err.Error(), "--produce-linger") {
			t.Errorf("%s: %v", tc.in, err)
		}
	}
}
