package eventstore

// TopicMaxMessage lets the tests read a topic's max.message.bytes the way
// Open does.
var TopicMaxMessage = topicMaxMessage
