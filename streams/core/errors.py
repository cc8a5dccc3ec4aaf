"""The project's exception roots.

``DependencyError`` is what a service the pipeline depends on answers with when it says no:
GitHub (404, exhausted retries), the LLM (a request or an output that stays wrong), git (no
such commit, a clone that fails). The clients raise subclasses of it; the stage framework
logs such a failure as one line (its message already explains it) where any other exception
keeps its traceback, without knowing any client.
"""

from __future__ import annotations


class DependencyError(Exception):
    """A dependency (GitHub, the LLM, git) refused or failed, with a message that says why."""
