"""Kafka: the embedded broker, client settings and topic admin, the topic catalog, group
offsets and the worker's watch for stalled commits."""
