"""The worker's Faust app, built from the settings (environment, ``SWE_STREAM_CONFIG``) when this
module is imported: ``swe-stream worker`` (default ``--app``) and
``faust -A streams.runtime.worker_app worker`` run it. Only the worker imports this module."""

from streams.core.settings import load_settings
from streams.runtime.app import create_app

app = create_app(load_settings())
