package eventstore

// TopicConfig lets the tests read a topic's configuration the way Open
// does.
var TopicConfig = topicConfig

// QueuedAppends is how many records wait for a round of partition p.
func (s *Store) QueuedAppends(p int32) int {
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	if pr := s.rounds[p]; pr != nil {
		return len(pr.queue)
	}
	return 0
}

// Lingering says whether partition p's next round waits for RoundLinger.
func (s *Store) Lingering(p int32) bool {
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	pr := s.rounds[p]
	return pr != nil && pr.lingering != 0
}

// RoundsStarted is how many rounds partition p has started.
func (s *Store) RoundsStarted(p int32) int {
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	if pr := s.rounds[p]; pr != nil {
		return pr.started
	}
	return 0
}
