"""A Faust app running only the test stage, for ``swe-stream worker --app``."""

from streams.app import create_app
from streams.settings import load_settings
from tests.streams.shout_stage import SHOUT

app = create_app(load_settings(), lambda settings, resources: [SHOUT])
