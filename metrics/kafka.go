package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var kafkaReqDesc = prometheus.NewDesc(Namespace+"_kafka_requests_total",
	"Kafka requests this node's clients wrote to brokers, by API (Produce, Fetch, OffsetCommit, ...). "+
		"A broker's CPU grows with its requests more than with its records, so requests per document say what a load costs the cluster.",
	[]string{"api"}, nil)

// kafkaAPIs bounds the API keys counted; Kafka's are below 100.
const kafkaAPIs = 128

// kafkaRequests counts requests per API key in plain atomics: it runs on
// every request of every client, and a labelled counter's lookup per
// request would cost more than the count. Scrapes turn it into series.
type kafkaRequests struct {
	n [kafkaAPIs]atomic.Int64
}

// OnBrokerWrite implements kgo.HookBrokerWrite. A request that failed to be
// written never reached the broker, so it is not counted.
func (k *kafkaRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil && key >= 0 && int(key) < kafkaAPIs {
		k.n[key].Add(1)
	}
}

func (k *kafkaRequests) Describe(ch chan<- *prometheus.Desc) { ch <- kafkaReqDesc }

func (k *kafkaRequests) Collect(ch chan<- prometheus.Metric) {
	for api, n := range k.counts() {
		ch <- prometheus.MustNewConstMetric(kafkaReqDesc, prometheus.CounterValue, float64(n), api)
	}
}

// counts returns the non-zero counts by API name.
func (k *kafkaRequests) counts() map[string]int64 {
	out := map[string]int64{}
	for key := range k.n {
		if n := k.n[key].Load(); n > 0 {
			out[kmsg.NameForKey(int16(key))] = n
		}
	}
	return out
}

// KafkaHook is the hook to give every Kafka client of the node
// (eventstore.KafkaHooks): it feeds docket_kafka_requests_total. A nil
// *Metrics returns a hook that counts nothing anyone reads.
func (m *Metrics) KafkaHook() kgo.Hook {
	if m == nil {
		return &kafkaRequests{}
	}
	return m.kafka
}

// KafkaRequests returns how many requests the node's clients have written,
// by API name, so far.
func (m *Metrics) KafkaRequests() map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m.kafka.counts()
}
