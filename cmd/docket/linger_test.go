package main

import (
	"flag"
	"fmt"
	"io"
	"testing"
	"time"
)

// TestLingerValidate: none and up to a second are fine for either linger;
// a negative one, or one long enough to look like a unit mistake (every
// append would wait that long), is refused with the flag's name.
func TestLingerValidate(t *testing.T) {
	t.Parallel()
	for _, flag := range []struct {
		name string
		set  func(*Config, time.Duration)
	}{
		{"--produce-linger", func(c *Config, d time.Duration) { c.ProduceLinger = d }},
		{"--round-linger", func(c *Config, d time.Duration) { c.RoundLinger = d }},
	} {
		for _, tc := range []struct {
			in  time.Duration
			err string
		}{
			{0, ""}, {time.Millisecond, ""}, {time.Second, ""},
			{-time.Millisecond, flag.name}, {time.Second + 1, flag.name},
		} {
			validated(t, flag.name+" "+tc.in.String(), func(c *Config) { flag.set(c, tc.in) }, tc.err)
		}
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

// TestRoundLingerDefault: serve lingers 1 ms before a partition's round
// unless told otherwise, and DOCKET_ROUND_LINGER tells it otherwise.
func TestRoundLingerDefault(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
	}{{"", time.Millisecond}, {"0s", 0}, {"3ms", 3 * time.Millisecond}} {
		if tc.env != "" {
			t.Setenv("DOCKET_ROUND_LINGER", tc.env)
		}
		var cfg Config
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.bindFlags(fs)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if cfg.RoundLinger != tc.want {
			t.Errorf("DOCKET_ROUND_LINGER=%q: --round-linger is %s, want %s", tc.env, cfg.RoundLinger, tc.want)
		}
	}
}
