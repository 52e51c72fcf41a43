package eventstore

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// keptForever is configs plus what a topic needs to keep every record: the
// event topic is the source of truth, and a node with an empty data dir, a
// replay or an auditor reads it from offset 0. Kafka's defaults
// (retention.ms of 7 days, which brokers apply unless the topic says
// otherwise) would delete the oldest events within weeks; compaction
// would keep one event per org.
func keptForever(configs map[string]*string) map[string]*string {
	out := maps.Clone(configs)
	forever, del := "-1", "delete"
	out["retention.ms"], out["retention.bytes"], out["cleanup.policy"] = &forever, &forever, &del
	return out
}

// checkTopicConfig warns when the event topic, created before or by
// someone else, is configured against what docket needs: a retention or
// compaction that deletes events (the views of a node rebuilt from such a
// log would miss them: Views.Run refuses it, with ErrLogTruncated), or a
// max.message.bytes below the records this node may append (its results
// would then fail as result_too_large at the topic's size, not at
// MaxRecordBytes). Only warnings, because the topic is the operator's to
// change (kafka-configs --alter --add-config ...); and not an error when
// the configuration cannot be read (an ACL, a broker that does not
// describe configs).
func (s *Store) checkTopicConfig(ctx context.Context, adm *kadm.Client) {
	if s.cfg.noCreate {
		return
	}
	// On a cluster, a topic just created reaches the brokers one by one,
	// and one that has not learnt of it yet answers
	// UNKNOWN_TOPIC_OR_PARTITION: a few tries, 100 ms apart.
	conf, err := topicConfig(ctx, adm, s.cfg.eventsTopic)
	for try := 1; err != nil && try < 5 && ctx.Err() == nil; try++ {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		conf, err = topicConfig(ctx, adm, s.cfg.eventsTopic)
	}
	if err != nil {
		s.cfg.log.Debug().Err(err).Msg("the event topic's configuration not read")
		return
	}
	if n, err := strconv.Atoi(conf["max.message.bytes"]); err == nil && n < int(s.cfg.maxRecord) {
		s.cfg.log.Warn().Str("topic", s.cfg.eventsTopic).Int("max_message_bytes", n).Int32("max_record_bytes", s.cfg.maxRecord).
			Msg("the event topic's max.message.bytes is below the records this node may append: a larger result fails as result_too_large; raise it with kafka-configs")
	}
	for _, bad := range deletesEvents(conf) {
		s.cfg.log.Error().Str("topic", s.cfg.eventsTopic).Str("config", bad).
			Msg("the event topic deletes events: it is the source of truth, and a node rebuilding its views, a replay or an audit needs all of it; set retention.ms=-1, retention.bytes=-1 and cleanup.policy=delete with kafka-configs --alter --add-config")
	}
}

// deletesEvents lists the settings of a topic's configuration under which
// Kafka deletes records: a finite retention, or compaction.
func deletesEvents(conf map[string]string) []string {
	var out []string
	for _, k := range []string{"retention.ms", "retention.bytes"} {
		if v, ok := conf[k]; ok && v != "-1" {
			out = append(out, k+"="+v)
		}
	}
	if v := conf["cleanup.policy"]; strings.Contains(v, "compact") {
		out = append(out, "cleanup.policy="+v)
	}
	return out
}

// topicConfig is a topic's configuration as the brokers report it.
func topicConfig(ctx context.Context, adm *kadm.Client, topic string) (map[string]string, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return nil, err
	}
	if rc.Err != nil {
		return nil, rc.Err
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			out[c.Key] = *c.Value
		}
	}
	if len(out) == 0 {
		return nil, errors.New("eventstore: the topic's configuration is empty")
	}
	return out, nil
}
