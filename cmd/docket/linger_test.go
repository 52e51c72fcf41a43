package main

import (
	"fmt"
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

// TestAppendRoundsValidate: the zero value is the default, one round; -1
// turns rounds off; more than franz-go's five requests in flight could use
// is refused with the flag's name.
func TestAppendRoundsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, store int
		err       string
	}{
		{0, 1, ""}, {1, 1, ""}, {5, 5, ""}, {-1, 0, ""},
		{6, 0, "--append-rounds"}, {-2, 0, "--append-rounds"},
	} {
		cfg := validated(t, fmt.Sprint(tc.in), func(c *Config) { c.AppendRounds = tc.in }, tc.err)
		if tc.err == "" && cfg.appendRounds() != tc.store {
			t.Errorf("--append-rounds %d gives the store %d rounds, want %d", tc.in, cfg.appendRounds(), tc.store)
		}
	}
}
