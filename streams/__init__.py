"""swe-stream's framework and engine, in layers; imports only point down this list (or sideways
inside one package), as ``tests/test_architecture.py`` checks:

    cli/         the ``swe-stream`` command: one module per command group
    runtime/     the topology, the Faust app, the one supervise loop, mine/run and replay
    (agents/)    the stages, one module each (a top-level package beside this one)
    pipeline/    the stage framework: Outcome, StageRunner, ledger, dead letters, sinks
    evaluation/  the Docker engine: images, sandboxes, environments, grading, validator,
                 task formats, harness (no Kafka)
    kafka/       the embedded broker, Kafka clients, the topic catalog, offsets, commits
    clients/     GitHub, GH Archive, the LLM, git (no Kafka, no stages)
    offline/     the offline world of the demo and the tests (the testing kit)
    core/        settings, metrics, errors
    (schemas/)   one pydantic model per topic (a top-level package)
"""
