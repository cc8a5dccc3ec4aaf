"""How ``swe-stream`` writes its log on stderr: text lines (the default), or with ``--log-format
json`` (``worker.log_format``, ``SWE_STREAM_WORKER_LOG_FORMAT``) one JSON object per record and
line, for log collectors: ``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message`` and, when
the record has one, ``exception`` (the traceback's text).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON (newlines in the message are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": utc_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            record.exc_text = record.exc_text or self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def utc_time(timestamp: float) -> str:
    """``timestamp`` as ISO 8601 in UTC, to the millisecond: 2026-11-25T19:33:18.123+00:00."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds")


def formatter(log_format: str) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def configure_logging(level: str, log_format: str, stream: TextIO | None = None) -> None:
    """The root logger's one handler on ``stream`` (stderr) in ``log_format``; like
    ``logging.basicConfig``, nothing changes when the root logger has handlers already."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter(log_format))
    logging.basicConfig(level=level.upper(), handlers=[handler])


def logging_config(level: str, log_format: str) -> dict[str, Any] | None:
    """A ``logging.config.dictConfig`` for a process that configures logging itself (the Faust
    worker): JSON lines on stderr; None for the text format (it keeps its own)."""
    if log_format != "json":
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
                "level": level.upper(),
            }
        },
        "root": {"level": level.upper(), "handlers": ["default"]},
    }


def error_line(line: str, log_format: str, exit_code: int, exception: str | None = None) -> str:
    """The one line a command ends with on an error, in ``log_format``: as it is, or as a JSON
    object like the log's records (logger ``swe_stream.cli``) with the ``exit_code``."""
    if log_format != "json":
        return line
    entry: dict[str, Any] = {
        "time": utc_time(datetime.now(UTC).timestamp()),
        "level": "ERROR",
        "logger": "swe_stream.cli",
        "message": line,
        "exit_code": exit_code,
    }
    if exception:
        entry["exception"] = exception
    return json.dumps(entry, ensure_ascii=False)
