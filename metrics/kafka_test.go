package metrics_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/docket/docket/metrics"
)

// The hook counts what the broker receives: every Produce exactly, and no
// Fetch the broker did not get (a last one may still be on the wire when
// the client closes).
func TestKafkaRequestsCountWhatTheBrokerSees(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var seen [128]atomic.Int64
	c.Control(func(r kmsg.Request) (kmsg.Response, error, bool) {
		seen[r.Key()].Add(1)
		return nil, nil, false // observe only; the cluster answers
	})
	m := metrics.New()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.WithHooks(m.KafkaHook()),
		kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(0), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const records = 20
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for got := 0; got < records; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, records, err)
		}
		got += len(fs.Records())
	}
	cl.Close()

	counted := m.KafkaRequests()
	if got, want := counted["Produce"], seen[kmsg.Produce].Load(); got != want || got < records {
		t.Errorf("Produce: counted %d, broker got %d, want equal and at least %d (one request per synchronous record)", got, want, records)
	}
	if got, want := counted["Fetch"], seen[kmsg.Fetch].Load(); got < want || want < 1 {
		t.Errorf("Fetch: counted %d, broker got %d", got, want)
	}
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "docket_kafka_requests_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			exposed[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
		}
	}
	if exposed["Produce"] != float64(counted["Produce"]) || len(exposed) != len(counted) {
		t.Errorf("/metrics shows %v, the counts are %v", exposed, counted)
	}
}
