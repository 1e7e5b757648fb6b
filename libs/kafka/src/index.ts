export { createKafka, createProducer, kafkaReachable } from './kafka-client';
export { kafkaConfigSchema, type KafkaConfig } from './kafka-config';
export { ensureTopics, pipelineTopics, prefixedTopic, type TopicSpec } from './topics';
export { consumerGroupLag, type ConsumerLag } from './consumer-lag';
export { readTopicSnapshot, type OffsetRange, type SnapshotRecord } from './topic-snapshot';
