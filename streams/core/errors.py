"""The project's exception roots.

``DependencyError`` is what a service the pipeline depends on answers with when it says no:
GitHub (404, exhausted retries), the LLM (a request or an output that stays wrong), git (no
such commit, a clone that fails). The clients raise subclasses of it; the stage framework
logs such a failure as one line (its message already explains it) where any other exception
keeps its traceback, without knowing any client. ``ServiceUnavailable`` is a service that
does not answer at all (the Docker engine gone, GitHub or the LLM endpoint refusing
connections): never a verdict, the stage waits for it.

``ExitCode`` and ``UserError`` are what the command line ends with: a problem the user can
fix is one line on stderr and a distinct exit code, never a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class DependencyError(Exception):
    """A dependency (GitHub, the LLM, git) refused or failed, with a message that says why."""


DOCKER, LLM, GITHUB = "docker", "llm", "github"  # the services a stage may wait for


class ServiceUnavailable(Exception):
    """A service the pipeline runs on (``service``: ``docker``, ``llm``, ``github``) does not
    answer at all. Not a verdict on the record: the stage framework pauses the stage, tries the
    record again with backoff and resumes where it was once the service is back."""

    def __init__(self, message: str = "", *, service: str = ""):
        super().__init__(message)
        self.service = service


class ExitCode(IntEnum):
    """``swe-stream``'s exit codes (README "Exit codes")."""

    OK = 0
    FAILURE = 1  # the work itself failed (a crashed stage, a failed hour, invalid tasks)
    USAGE = 2  # bad flags or input: an unknown option, a malformed hour, a missing file
    CLUSTER_UNREACHABLE = 3  # no Kafka cluster answers at --bootstrap
    PORT_IN_USE = 4  # the /metrics port is taken
    MISSING_TOOL = 5  # a program the command runs is not installed (debootstrap)
    DEPENDENCY_FAILED = 6  # a DependencyError: GitHub, the LLM or git said no
    PARTIAL = 7  # an ingest ended with hours only partly read
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)


class UserError(Exception):
    """A problem the user can fix: the command line prints ``problem — fix`` as one line and
    exits with ``code``, without a traceback (unless ``--verbose``)."""

    code: ExitCode = ExitCode.FAILURE

    def __init__(self, problem: str, fix: str = "", code: ExitCode | None = None):
        super().__init__(f"{problem} — {fix}" if fix else problem)
        self.problem = problem
        self.fix = fix
        if code is not None:
            self.code = code


class UsageError(UserError):
    code = ExitCode.USAGE


class ClusterUnreachable(UserError):
    code = ExitCode.CLUSTER_UNREACHABLE


class PortInUse(UserError):
    code = ExitCode.PORT_IN_USE


class MissingTool(UserError, RuntimeError):
    """A program a command runs is not installed (a RuntimeError too, for older callers)."""

    code = ExitCode.MISSING_TOOL
