"""The evaluation engine: Docker images, sandboxes, install recipes, test-log parsers, grading,
the validator, the task formats and the harness. Knows no Kafka: the stages and commands above
it call it."""
