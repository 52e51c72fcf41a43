package eventstore

// TopicConfig lets the tests read a topic's configuration the way Open
// does.
var TopicConfig = topicConfig
