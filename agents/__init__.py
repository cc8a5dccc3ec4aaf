"""The pipeline's stages, one module each (``agents/prefilter.py``, ``agents/enrich.py``, ...).

A stage module holds its logic first, as plain (async) functions tested without Kafka, and
last a ``Stage`` (see ``streams.stage``) naming its input and output topics; the worker runs the
stages listed in ``streams.topology.pipeline_stages``.
"""
