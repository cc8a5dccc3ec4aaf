"""Base record model, shared field types and key helpers for every topic value."""

from __future__ import annotations

import functools
import gzip
import io
import re
import zlib
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, ValidationError

__all__ = [
    "GHARCHIVE_HOUR_RE",
    "PR_KEY_RE",
    "REPO_NAME_RE",
    "ContentSha256",
    "GHArchiveHour",
    "GitSha",
    "InstanceId",
    "NonEmptyStr",
    "PRNumber",
    "PullRequestRecord",
    "Record",
    "RepoName",
    "SubRecord",
    "ToolchainVersions",
    "gharchive_hour",
    "instance_id_for",
    "ledger_key",
    "parse_gharchive_hour",
    "parse_pr_key",
    "pr_key",
    "validate_repo_name",
]

PR_NUMBER_MAX = 2**31 - 1

_OWNER = r"[A-Za-z0-9][A-Za-z0-9-]{0,38}"
_NAME = r"[A-Za-z0-9._-]{1,100}"
# ECMA-262 flavour for JSON Schema consumers; Python validation uses the checks below.
_REPO_NAME_JSON_PATTERN = rf"^{_OWNER}/(?!\.\.?$){_NAME}$"

REPO_NAME_RE = re.compile(rf"(?P<owner>{_OWNER})/(?P<name>{_NAME})")
PR_KEY_RE = re.compile(rf"(?P<repo>{_OWNER}/{_NAME})#(?P<number>[1-9][0-9]{{0,9}})")
# [0-9], not \d: \d also matches other scripts' digits, which strptime reads as well
GHARCHIVE_HOUR_RE = re.compile(r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})-(?P<hour>1?[0-9]|2[0-3])")


def validate_repo_name(value: str) -> str:
    """Return ``value`` if it is a valid GitHub ``owner/repo`` name, else raise ValueError."""
    if not isinstance(value, str):
        raise ValueError(f"repository name must be a string, got {type(value).__name__}")
    match = REPO_NAME_RE.fullmatch(value)
    if match is None:
        raise ValueError(
            f"invalid repository name {value!r}: expected 'owner/repo' with owner matching "
            f"{_OWNER} and repo matching {_NAME}"
        )
    if match["name"] in {".", ".."}:
        raise ValueError(f"invalid repository name {value!r}: repo may not be '.' or '..'")
    return value


RepoName = Annotated[
    str,
    AfterValidator(validate_repo_name),
    WithJsonSchema({"type": "string", "pattern": _REPO_NAME_JSON_PATTERN, "maxLength": 140}),
]
"""A GitHub repository full name, ``owner/repo``."""

# strict: JSON true, 7.0 or "7" is no PR number (lax mode would read them as 1 and 7)
PRNumber = Annotated[int, Field(ge=1, le=PR_NUMBER_MAX, strict=True)]
"""A pull request (or issue) number."""

GitSha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
"""A full lowercase hex git object id (SHA-1, or SHA-256)."""

ContentSha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
"""A lowercase hex SHA-256 digest."""

NonEmptyStr = Annotated[str, Field(min_length=1)]

InstanceId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,299}$")]
"""A task instance id such as ``django__django-16255`` (safe as a file name)."""


def pr_key(repo: str, number: int) -> str:
    """The Kafka key of a PR-level record: ``owner/repo#number``."""
    validate_repo_name(repo)
    if isinstance(number, bool) or not isinstance(number, int):
        raise ValueError(f"PR number must be an int, got {type(number).__name__}")
    if not 1 <= number <= PR_NUMBER_MAX:
        raise ValueError(f"PR number {number} out of range 1..{PR_NUMBER_MAX}")
    return f"{repo}#{number}"


def ledger_key(repo: str, number: int, pipeline_version: int) -> str:
    """The ``swe.ledger`` key of a PR in one pipeline version: ``owner/repo#number@v<N>``.
    The entry is written to the partition of the PR's own key (``pr_key``), beside the PR's
    records, so that ledger lookups stay partition-local."""
    return f"{pr_key(repo, number)}@v{pipeline_version}"


def parse_pr_key(key: str) -> tuple[str, int]:
    """Split an ``owner/repo#number`` key into ``(repo, number)``; ValueError if malformed."""
    if not isinstance(key, str):
        raise ValueError(f"PR key must be a string, got {type(key).__name__}")
    match = PR_KEY_RE.fullmatch(key)
    if match is None:
        raise ValueError(f"invalid PR key {key!r}: expected 'owner/repo#number'")
    repo = validate_repo_name(match["repo"])
    number = int(match["number"])
    if number > PR_NUMBER_MAX:
        raise ValueError(f"invalid PR key {key!r}: number out of range 1..{PR_NUMBER_MAX}")
    return repo, number


def instance_id_for(repo: str, number: int) -> str:
    """SWE-bench style instance id: ``owner__repo-number``."""
    pr_key(repo, number)
    owner, name = repo.split("/", 1)
    return f"{owner}__{name}-{number}"


def parse_gharchive_hour(value: str) -> datetime:
    """Parse a GH Archive hour name (``YYYY-MM-DD-H``, no leading zero) into an aware datetime."""
    match = GHARCHIVE_HOUR_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"invalid GH Archive hour {value!r}: expected 'YYYY-MM-DD-H' (H 0..23)")
    try:
        day = datetime.strptime(match["date"], "%Y-%m-%d")
    except ValueError as exc:
        raise ValueError(f"invalid GH Archive hour {value!r}: {exc}") from None
    return day.replace(hour=int(match["hour"]), tzinfo=UTC)


def gharchive_hour(moment: datetime) -> str:
    """The GH Archive hour name containing ``moment`` (naive datetimes are taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d}-{moment.hour}"


@functools.lru_cache(maxsize=4096)
def _check_gharchive_hour(value: str) -> str:
    # cached: every record of an hour carries the same name, and strptime is slow
    parse_gharchive_hour(value)
    return value


GHArchiveHour = Annotated[
    str,
    AfterValidator(_check_gharchive_hour),
    WithJsonSchema({"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}-(1?[0-9]|2[0-3])$"}),
]
"""A GH Archive hour name, e.g. ``2015-01-01-0``."""


class SubRecord(BaseModel):
    """Base of nested value objects: strict about unknown fields, no versions of their own."""

    model_config = ConfigDict(extra="forbid", frozen=False, str_strip_whitespace=False)


TOOLCHAIN_NAME = r"^[a-z][a-z0-9_]*$"
TOOLCHAIN_VERSION = r"^[0-9][0-9A-Za-z.+~-]{0,31}$"
_TOOLCHAIN_NAME_RE = re.compile(TOOLCHAIN_NAME)
_TOOLCHAIN_VERSION_RE = re.compile(TOOLCHAIN_VERSION)


def _toolchain_keys_schema(schema: dict[str, Any]) -> None:
    schema["additionalProperties"] = {
        "anyOf": [{"type": "string", "pattern": TOOLCHAIN_VERSION}, {"type": "null"}]
    }
    schema["propertyNames"] = {"pattern": TOOLCHAIN_NAME}


class ToolchainVersions(BaseModel):
    """A model whose other keys are toolchain versions, each under its toolchain's name
    (``python: "3.11"``, ``rust: "1.85"``): the languages are plugins, so no field names one.
    Which toolchains exist and how each writes its versions is the language registry's to
    check (``recipes.overrides``); here a key must look like a name and its value like a
    version, so a misspelt field still fails."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_toolchain_keys_schema)

    @model_validator(mode="after")
    def _toolchain_keys(self) -> Self:
        for key, value in (self.model_extra or {}).items():
            if not _TOOLCHAIN_NAME_RE.match(key):
                problem = "unknown field"
            elif value is None or (isinstance(value, str) and _TOOLCHAIN_VERSION_RE.match(value)):
                continue
            elif isinstance(value, str):
                problem = f"unknown field, or a toolchain version that is none ({value!r})"
            else:
                problem = (
                    f"unknown field, or a toolchain version that is no string ({value!r}: "
                    'quote it in YAML, "3.10" and not 3.10)'
                )
            context = {"key": key, "problem": problem}
            error = PydanticCustomError("unknown_field", "{key}: {problem}", context)
            raise ValidationError.from_exception_data(
                type(self).__name__, [{"type": error, "loc": (key,), "input": value}]
            )
        return self

    @property
    def toolchain_versions(self) -> dict[str, str]:
        """The toolchain versions it names, by toolchain."""
        return {k: v for k, v in (self.model_extra or {}).items() if isinstance(v, str)}

    def version(self, toolchain: str) -> str | None:
        """The version of ``toolchain`` it names, or None."""
        return self.toolchain_versions.get(toolchain)


class Record(BaseModel):
    """Base of every topic value: carries the schema and pipeline versions."""

    model_config = ConfigDict(extra="forbid", frozen=False, str_strip_whitespace=False)

    SCHEMA_VERSION: ClassVar[int] = 1

    schema_version: int = Field(
        default=1, description="Version of this record's schema; must equal the model's."
    )
    pipeline_version: int = Field(ge=1, description="Pipeline version that produced the record.")

    @model_validator(mode="before")
    @classmethod
    def _default_schema_version(cls, data: Any) -> Any:
        # The static default above is for type checkers; the real default is per model.
        if isinstance(data, dict) and "schema_version" not in data:
            data = {**data, "schema_version": cls.SCHEMA_VERSION}
        return data

    @field_validator("schema_version")
    @classmethod
    def _check_schema_version(cls, value: int) -> int:
        if value != cls.SCHEMA_VERSION:
            raise ValueError(
                f"{cls.__name__} schema_version {value} is not supported: this code reads "
                f"schema_version {cls.SCHEMA_VERSION} only"
            )
        return value

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(core_schema)
        target = handler.resolve_ref_schema(json_schema)
        prop = target.get("properties", {}).get("schema_version")
        if prop is not None:
            prop["const"] = cls.SCHEMA_VERSION
            prop["default"] = cls.SCHEMA_VERSION
        return json_schema

    def to_json(self) -> bytes:
        """Serialize to the bytes written to Kafka: JSON, gzipped when it is large (a task
        whose runs reported tens of thousands of tests; Kafka takes about 1 MB a message)."""
        data = self.model_dump_json().encode()
        if len(data) <= COMPRESS_ABOVE_BYTES:
            return data
        return gzip.compress(data, compresslevel=6, mtime=0)

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Parse and validate JSON bytes read from Kafka (gzipped ones too)."""
        try:
            text = record_json(data)
        except (OSError, EOFError, zlib.error, ValueError) as exc:  # bad gzip, or a bomb
            problem = PydanticCustomError(
                "gzip_record", "a gzipped record that does not unpack: {why}", {"why": str(exc)}
            )
            raise ValidationError.from_exception_data(
                cls.__name__, [{"type": problem, "loc": (), "input": data[:64]}]
            ) from None
        return cls.model_validate_json(text)


# A record's JSON larger than this is written gzipped (what Kafka carries is the gzip: test
# ids compress tenfold); its first bytes are gzip's magic, which no JSON text starts with
COMPRESS_ABOVE_BYTES = 256 * 1024
GZIP_MAGIC = b"\x1f\x8b"
MAX_RECORD_BYTES = 256 << 20  # what one record may unpack to (a gzip bomb is refused)


def record_json(data: bytes | str) -> bytes | str:
    """A record's JSON as read from Kafka: gunzipped when it was written gzipped
    (``Record.to_json``); ValueError when it unpacks to more than ``MAX_RECORD_BYTES``."""
    # anything else (text, a tombstone's None) is for the JSON parser to accept or refuse
    if not isinstance(data, bytes | bytearray) or not data.startswith(GZIP_MAGIC):
        return data
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as unpacked:
        text = unpacked.read(MAX_RECORD_BYTES + 1)
    if len(text) > MAX_RECORD_BYTES:
        raise ValueError(f"a gzipped record unpacks to more than {MAX_RECORD_BYTES} bytes")
    return text


class PullRequestRecord(Record):
    """Base of PR-level topic values, keyed ``owner/repo#number``."""

    repo: RepoName
    number: PRNumber

    @property
    def key(self) -> str:
        """The Kafka key ``owner/repo#number``."""
        return pr_key(self.repo, self.number)
