"""The outside services: GitHub's API, GH Archive, the LLM (OpenAI-compatible) and git. No
Kafka, no stages: each raises ``streams.core.errors.DependencyError`` subclasses."""
