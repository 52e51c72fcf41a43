package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestStartFailsCleanly: a node that cannot start (its broker port is
// taken) returns an error instead of panicking, and leaves nothing running.
func TestStartFailsCleanly(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := Config{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", BrokerListen: ln.Addr().String(), TopicPrefix: "docket",
		Partitions: 1, WorkerConcurrency: 1, DocumentTimeout: time.Second, MaxPages: 1, MaxUpload: 1024, LogFormat: "json",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := startNode(ctx, cfg, zerolog.Nop())
	if err == nil {
		n.close()
		t.Fatal("started with its broker address taken")
	}
	if n != nil {
		t.Fatalf("got a node with the error %v", err)
	}
}
