"""The pipeline's stages, one module each (``agents/prefilter.py``, ``agents/enrich.py``, ...),
and the helper modules they share (``paths``, ``prompts``, ``backends``, ``bots``, ...).

A stage module holds its logic first, as plain (async) functions tested without Kafka, and
last a ``Stage`` (see ``streams.pipeline.stage``) naming its input and output topics; the
worker runs the stages listed in ``streams.runtime.topology.pipeline_stages``. A stage module
imports helpers and the layers below (``streams.pipeline``, ``streams.evaluation``,
``streams.clients``, ...), never another stage.
"""
