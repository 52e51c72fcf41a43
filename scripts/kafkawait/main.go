// Command kafkawait waits until a Kafka cluster answers: every one of the
// expected brokers is in the metadata, a controller is known, and each broker
// answers an ApiVersions request on its own. It is used by scripts/kafka.sh.
//
//	go run ./scripts/kafkawait -brokers 127.0.0.1:19093 -n 1 -timeout 90s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	seeds := flag.String("brokers", "", "comma-separated bootstrap brokers")
	n := flag.Int("n", 1, "number of brokers expected in the cluster")
	timeout := flag.Duration("timeout", 90*time.Second, "give up after this long")
	flag.Parse()
	var list []string
	for _, s := range strings.Split(*seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		fmt.Fprintln(os.Stderr, "kafkawait: -brokers is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	var last error
	for {
		if last = check(ctx, list, *n); last == nil {
			fmt.Printf("kafkawait: %d broker(s) ready after %s\n", *n, time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "kafkawait: cluster not ready after %s: %v\n", *timeout, last)
			os.Exit(1)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func check(ctx context.Context, seeds []string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if len(md.Brokers) < n {
		return fmt.Errorf("metadata lists %d of %d brokers", len(md.Brokers), n)
	}
	if md.Controller < 0 {
		return errors.New("no active controller yet")
	}
	// ApiVersions goes to every broker, so each must answer on its own.
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	for _, v := range vs {
		if v.Err != nil {
			return fmt.Errorf("broker %d: %w", v.NodeID, v.Err)
		}
	}
	return nil
}
