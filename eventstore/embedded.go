package eventstore

import (
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is a Kafka-protocol broker running inside the process: franz-go's
// kfake, persisted under a data directory with a sync per produced batch so
// that an acknowledged append survives kill -9. It listens on a real TCP
// address, so kcat and any other Kafka client can read the log.
type Embedded struct {
	c    *kfake.Cluster
	addr string
}

// StartEmbedded starts a single-broker cluster that stores its log in dir and
// listens on listen (host:port; port 0 picks a free one).
func StartEmbedded(dir, listen string, partitions int32) (*Embedded, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("eventstore: embedded broker listen %s: %w", listen, err)
	}
	used := false
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.DataDir(dir),
		kfake.SyncWrites(),
		kfake.DefaultNumPartitions(int(partitions)),
		kfake.ClusterID("docket-embedded"),
		// kfake dials its own address; hand it the listener we already
		// bound so the configured host (not only the port) is honoured.
		kfake.ListenFn(func(string, string) (net.Listener, error) {
			if used {
				return nil, fmt.Errorf("eventstore: embedded broker listens once")
			}
			used = true
			return ln, nil
		}),
	)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("eventstore: embedded broker: %w", err)
	}
	return &Embedded{c: c, addr: ln.Addr().String()}, nil
}

// Addr is the broker's bound host:port.
func (e *Embedded) Addr() string { return e.addr }

// Close stops the broker, flushing its files.
func (e *Embedded) Close() { e.c.Close() }
