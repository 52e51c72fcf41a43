package main

import (
	"flag"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeFileMatchesCode: Docker cannot run here, so the compose file is
// checked against the code instead: every service it needs exists, every
// docket flag and DOCKET_* variable it sets is one that `docket serve`
// reads, roles are valid, and published ports match --listen.
func TestComposeFileMatchesCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]struct {
			Build       any               `yaml:"build"`
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kafka-1", "kafka-2", "kafka-3", "s3", "api-1", "api-2", "worker-1", "worker-2"} {
		if _, ok := file.Services[want]; !ok {
			t.Errorf("service %s missing", want)
		}
	}
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.bindFlags(fs)

	apis, workers := 0, 0
	for name, svc := range file.Services {
		if svc.Build == nil {
			continue
		}
		if len(svc.Command) == 0 || svc.Command[0] != "serve" {
			t.Errorf("%s: command %v does not run docket serve", name, svc.Command)
			continue
		}
		for k := range svc.Environment {
			flagName := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "DOCKET_")), "_", "-")
			if !strings.HasPrefix(k, "DOCKET_") || fs.Lookup(flagName) == nil {
				t.Errorf("%s: environment %s is not read by docket serve", name, k)
			}
		}
		args := svc.Command[1:]
		if err := fs.Parse(args); err != nil {
			t.Errorf("%s: command %v: %v", name, svc.Command, err)
			continue
		}
		roles := fs.Lookup("roles").Value.String()
		if err := (&Config{Roles: roles}).validateRoles(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		set := (&Config{Roles: roles}).roleSet()
		if set[roleAPI] {
			apis++
			_, port, _ := net.SplitHostPort(fs.Lookup("listen").Value.String())
			if !slices.ContainsFunc(svc.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port) }) {
				t.Errorf("%s: listens on %s but publishes %v", name, port, svc.Ports)
			}
			if hc := strings.Join(svc.Healthcheck.Test, " "); !strings.Contains(hc, "/docket health") || !strings.Contains(hc, ":"+port+"/readyz") {
				t.Errorf("%s: health check %q does not probe /readyz on %s", name, hc, port)
			}
		}
		if set[roleWorker] && !set[roleAPI] {
			workers++
		}
		// Reset to defaults for the next service.
		fs = flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.bindFlags(fs)
	}
	if apis != 2 || workers != 2 {
		t.Errorf("%d API nodes and %d worker nodes, want 2 and 2", apis, workers)
	}
	// The health subcommand the API services use exists.
	if err := run(t.Context(), []string{"health", "-h"}, io.Discard, io.Discard); err != nil && err != flag.ErrHelp {
		t.Errorf("docket health: %v", err)
	}
}
