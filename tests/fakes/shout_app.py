"""A Faust app running only the test stage, for ``swe-stream worker --app``."""

from streams.core.settings import load_settings
from streams.runtime.app import create_app
from tests.fakes.shout_stage import SHOUT

app = create_app(load_settings(), lambda settings, resources: [SHOUT])
