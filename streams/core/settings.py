"""The one settings model of swe-stream.

Precedence, lowest to highest: defaults < YAML file (``--config`` or ``SWE_STREAM_CONFIG``,
read with ``yaml.safe_load``) < environment (``SWE_STREAM_<SECTION>_<FIELD>``, e.g.
``SWE_STREAM_KAFKA_BOOTSTRAP``, plus the conventional ``GITHUB_TOKEN`` and
``OPENROUTER_API_KEY``) < command-line flags.

Secrets are ``SecretStr``: they print as ``**********`` everywhere, including
``swe-stream config show``; code that needs the value calls ``get_secret_value()`` at the
point of use and never logs it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

ENV_PREFIX = "SWE_STREAM_"
CONFIG_ENV = "SWE_STREAM_CONFIG"

# Conventional variable names users already have set, mapped to their place in the model.
WELL_KNOWN_SECRETS: dict[str, tuple[str, str]] = {
    "GITHUB_TOKEN": ("github", "token"),
    "OPENROUTER_API_KEY": ("llm", "api_key"),
}


def machine_memory_bytes() -> int | None:
    """This machine's memory (None where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def validations_for_machine(
    cores: int | None = None, memory_bytes: int | None = None, per_validation_gib: float = 4.0
) -> int:
    """How many validations run well at once here: one more than the cores (part of a
    validation waits on the network and on the Docker engine: on two cores, 2 at once
    validated 1.38x and 3 at once 1.61x as many PRs per hour as 1), no more than the memory
    holds at ``per_validation_gib`` each (a sandbox's default memory limit), 1 to 8."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    memory = memory_bytes if memory_bytes is not None else machine_memory_bytes()
    by_memory = int(memory / (per_validation_gib * (1 << 30))) if memory else cores + 1
    return max(1, min(8, cores + 1, by_memory))


def split_list(value: Any) -> Any:
    """Lists from the environment or flags: a JSON list, or comma-separated words."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


# NoDecode: pydantic-settings would json-decode list variables itself and fail on "a,b"
StrList = Annotated[list[str], NoDecode, BeforeValidator(split_list)]
SecretList = Annotated[list[SecretStr], NoDecode, BeforeValidator(split_list)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class KafkaSettings(Section):
    bootstrap: str | None = Field(
        None,
        description="host:port[,host:port]; unset = start the embedded broker (Tansu)",
    )
    partitions: int = Field(
        4, ge=1, le=1024, description="partition count of every PR-level topic (co-partitioned)"
    )
    replication_factor: int | None = Field(
        None,
        ge=1,
        description="copies of each partition of the catalog's topics and Faust's; unset = 3 "
        "on a cluster of three or more brokers, else one per broker",
    )
    min_insync_replicas: int | None = Field(
        None,
        ge=1,
        description="copies that must have a write (acks=all) on a replicated topic; unset = "
        "2 with 3 copies (a broker may die without a write lost or refused)",
    )
    idempotence: Literal["auto", "on", "off"] = Field(
        "auto",
        description="idempotent producer; auto = off on the embedded broker, on elsewhere",
    )
    rebalance_timeout_seconds: float | None = Field(
        None, gt=0, description="unset = 3 s on the embedded broker, Faust's 60 s elsewhere"
    )
    session_timeout_seconds: float | None = Field(
        None, gt=0, description="unset = 10 s on the embedded broker, Faust's 60 s elsewhere"
    )
    fetch_max_wait_ms: int | None = Field(
        None,
        ge=0,
        description="how long a worker's fetch may wait at the broker for data to arrive; "
        "unset = 100 ms on Apache Kafka (Faust's own 1.5 s holds back the partitions with "
        "records while a fetch waits on idle ones), Faust's 1.5 s on the embedded broker (it "
        "answers each fetch at a cost: 100 ms took 6 percent of a core per idle worker)",
    )
    embedded_port: int = Field(0, ge=0, le=65535, description="0 = pick a free port")
    local_broker: Literal["auto", "embedded", "apache"] = Field(
        "auto",
        description="the broker a command starts when no bootstrap is named: auto = `run` "
        "starts Apache Kafka with its storage in worker.data_dir/kafka when a JDK is here "
        "(nothing is lost when it restarts), every other command the embedded broker",
    )
    apache_version: str = Field(
        "4.4.0", description="the Apache Kafka a command starts (from Maven Central, once)"
    )

    @field_validator("bootstrap")
    @classmethod
    def _strip_scheme(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        return value.split("://", 1)[1] if "://" in value else value


class WorkerSettings(Section):
    app_id: str = Field(
        "",
        description="Faust app id = consumer group; empty = swe-stream-v<pipeline_version>, so "
        "that version N+1 runs beside N with its own offsets",
    )
    web_host: str = "127.0.0.1"
    web_port: int = Field(6066, ge=0, le=65535)
    metrics_port: int = Field(9108, ge=0, le=65535, description="Prometheus /metrics; 0 = off")
    lag_interval_seconds: float = Field(
        10.0, gt=0, description="how often the consumer lag gauge is refreshed"
    )
    commit_stall_check_seconds: float = Field(
        5.0,
        gt=0,
        description="how often a partition whose offset commit is stuck behind records never "
        "acked is looked for; one unchanged for 3 checks in a row is read again (Faust loses "
        "the acks of a restarted worker's first records now and then, and no commit passes "
        "them: at 30 s, the commit waited 96 s after a restart)",
    )
    lost_fetch_check_seconds: float = Field(
        5.0,
        gt=0,
        description="how often a stream partition whose fetched records reached no stream is "
        "looked for (the consumer idle, the partition's fetch position past its commit); one "
        "unchanged for 3 checks in a row is read again from its committed offset",
    )
    recovery_stall_seconds: float = Field(
        45.0,
        gt=0,
        description="a table recovery's changelog partition behind its end that got no record "
        "for this long is sought again (seen on Apache Kafka: a survivor's recovery never got "
        "a record of two of its four changelog partitions after a rebalance)",
    )
    outage_backoff_seconds: float = Field(
        1.0,
        gt=0,
        description="a stage whose service (the Docker engine, the LLM endpoint, GitHub) does "
        "not answer waits this long before trying the record again; doubles per attempt",
    )
    outage_max_backoff_seconds: float = Field(
        60.0, gt=0, description="the longest wait between two tries during an outage"
    )
    data_dir: Path = Path("data")
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["text", "json"] = Field(
        "text",
        description="log records on stderr: text lines, or one JSON object per line (time, "
        "level, logger, message, exception) for log collectors",
    )
    stages: StrList = Field(
        default_factory=list, description="stages this worker runs (names); empty = every stage"
    )
    group_instance_id: str = Field(
        "",
        description="static membership on Apache Kafka (group.instance.id): a worker started "
        "again with the same id takes its partitions back at once instead of waiting out its "
        "dead self's session (60 s); empty = this host's name and data_dir, 'none' = dynamic "
        "membership. Two workers of one group need different ids (data directories)",
    )


class GHArchiveSettings(Section):
    base_url: str = "https://data.gharchive.org"
    concurrency: int = Field(8, ge=1, le=64, description="hours fetched at once")
    order_buffer_mb: int = Field(
        256,
        ge=1,
        description="records an hour holds while an earlier hour is still publishing (hours "
        "publish in order, so a PR's events reach the topic in time order)",
    )
    poll_seconds: float = Field(60.0, gt=0, description="--follow: wait between checks")
    max_attempts: int = Field(5, ge=1, description="download attempts per hour")
    timeout_seconds: float = Field(60.0, gt=0)
    dlq_samples_per_hour: int = Field(
        100, ge=0, description="bad lines sent to gharchive.dlq per hour (all are counted)"
    )


class GitHubSettings(Section):
    api_url: str = "https://api.github.com"
    git_url_template: str = "https://github.com/{owner}/{repo}.git"
    token: SecretStr | None = None
    tokens: SecretList = Field(
        default_factory=list,
        description="more tokens, used round-robin with `token` (env: comma-separated)",
    )
    concurrency: int = Field(8, ge=1, le=256, description="API requests in flight at once")
    max_attempts: int = Field(5, ge=1, description="attempts per request on 5xx / timeouts")
    backoff_seconds: float = Field(1.0, gt=0, description="first retry delay; doubles, jittered")
    max_backoff_seconds: float = Field(60.0, gt=0)
    timeout_seconds: float = Field(30.0, gt=0)
    rate_limit_reserve: int = Field(
        25, ge=0, description="pause a token when its remaining budget falls to this"
    )
    secondary_limit_seconds: float = Field(
        60.0, gt=0, description="wait after a secondary rate limit without Retry-After"
    )
    max_rate_limit_wait_seconds: float = Field(
        3900.0, gt=0, description="longest wait for a reset before failing the request"
    )
    etag_cache_size: int = Field(10_000, ge=0, description="responses kept for If-None-Match")
    repo_cache_ttl_seconds: float = Field(
        7 * 24 * 3600.0, gt=0, description="how long a repository's facts are reused"
    )

    def token_pool(self) -> list[SecretStr]:
        """Every configured token once, ``token`` first."""
        pool: list[SecretStr] = []
        for secret in [self.token, *self.tokens]:
            if secret is not None and secret.get_secret_value() not in {
                known.get_secret_value() for known in pool
            }:
                pool.append(secret)
        return pool


class PrefilterSettings(Section):
    bots: StrList = Field(
        default_factory=lambda: ["dependabot", "renovate", "greenkeeperio-bot", "snyk-bot"],
        description="logins dropped as bots, besides every `[bot]` login",
    )
    org_only: bool = Field(True, description="keep only repos owned by organisations")
    allow_repos: StrList = Field(
        default_factory=list, description="owner/repo or owner/* patterns; empty = all"
    )
    deny_repos: StrList = Field(default_factory=list, description="owner/repo or owner/*")


class EnrichSettings(Section):
    languages: StrList | None = Field(
        # unset: the languages validation can install and test (the registered languages and
        # their other names): other PRs would spend API calls, LLM tokens and a clone before
        # validate rejects them
        None,
        description="repository languages kept (GitHub names); unset = every language "
        "validation knows (the registered languages, installed plugins' too); empty = all",
    )
    min_stars: int = Field(20, ge=0)
    min_files: int = Field(1, ge=0)
    max_files: int = Field(50, ge=1)
    min_added_lines: int = Field(3, ge=0)
    max_added_lines: int = Field(1000, ge=1)
    require_source_change: bool = Field(True, description="at least one non-test source file")
    max_linked_issues: int = Field(3, ge=0, description="linked issues fetched per PR")


class LLMSettings(Section):
    base_url: str = "https://openrouter.ai/api/v1"
    model: str = "moonshotai/kimi-k2.5:nitro"
    api_key: SecretStr | None = None
    timeout_seconds: float = Field(120.0, gt=0)
    max_attempts: int = Field(5, ge=1, description="HTTP attempts on 429 / 5xx / timeouts")
    max_output_attempts: int = Field(
        3, ge=1, description="replies asked for until the tool call validates"
    )
    backoff_seconds: float = Field(2.0, gt=0)
    max_backoff_seconds: float = Field(60.0, gt=0)
    max_retry_after_seconds: float = Field(300.0, gt=0, description="cap on a Retry-After wait")
    temperature: float = Field(0.0, ge=0, le=2)
    concurrency: dict[str, int] = Field(
        default_factory=lambda: {"classify": 10, "score": 3, "testgen": 3},
        description="requests in flight per purpose",
    )
    default_concurrency: int = Field(3, ge=1)


class ClassifySettings(Section):
    backend: Literal["auto", "llm", "heuristic"] = Field(
        "auto", description="auto = llm when llm.api_key is set, else heuristic (announced)"
    )
    difficulties: StrList = Field(
        default_factory=list, description="keep only these (easy, medium, hard); empty = all"
    )
    min_score: float = Field(0.0, ge=0, le=1, description="PRs scoring below are rejected")
    max_score: float = Field(1.0, ge=0, le=1, description="PRs scoring above are rejected")

    @model_validator(mode="after")
    def _ordered_scores(self) -> ClassifySettings:
        if self.min_score > self.max_score:
            raise ValueError(f"min_score {self.min_score} is above max_score {self.max_score}")
        return self

    @field_validator("difficulties")
    @classmethod
    def _known_levels(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - {"easy", "medium", "hard"})
        if unknown:
            raise ValueError(f"unknown difficulty {unknown}: use easy, medium or hard")
        return value


class ScoreSettings(Section):
    backend: Literal["auto", "llm", "heuristic"] = "auto"
    min_quality: float = Field(0.5, ge=0, le=1, description="tasks scoring below are rejected")


# a toolchain's images under their name of old (``rust_images``), in a file or the environment
TOOLCHAIN_IMAGES_KEY = re.compile(r"^(?!toolchain_images$)([a-z][a-z0-9]*)_images$")


class DockerSettings(Section):
    base_image: str = Field(
        "swe-stream/base:bookworm",
        description="the default image, for recipes whose toolchain has no image of its own",
    )
    toolchain_images: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="image per version of a toolchain, by toolchain (a language's, a plugin's "
        "too: `swe-stream images list` names them): {<toolchain>: {<version>: <image>}}; a "
        "toolchain named here has these images alone, the others their language's own "
        "(Debian's toolchain of each suite, built by `swe-stream images base --toolchains`). "
        "Also written `<toolchain>_images: {...}` (SWE_STREAM_DOCKER_<TOOLCHAIN>_IMAGES)",
    )
    cache_level: Literal["none", "base", "env", "instance"] = Field(
        "env", description="image layers kept after a task (as SWE-bench's --cache_level)"
    )
    package_cache: str = Field(
        "swe-stream-packages",
        description="the Docker volume (or absolute host path) where every image build keeps "
        "uv's and pip's downloads and built wheels; empty = no cache",
    )
    debian_mirror: str = Field(
        "http://deb.debian.org/debian",
        description="the Debian archive whose file lists (Contents-amd64, Contents-all) say "
        "which package holds a file a build looks for (a header, a CMake or pkg-config package "
        "file)",
    )
    debian_contents: str = Field(
        "",
        description="the directory of those file lists, read once a day per suite; empty = "
        "the user's cache ($XDG_CACHE_HOME/swe-stream/debian-contents)",
    )
    build_step_timeout_seconds: float = Field(
        3600.0, gt=0, description="an image build step is killed after this long"
    )
    memory_mb: int = Field(4096, ge=64, description="memory limit of a sandbox container")
    cpus: float = Field(2.0, gt=0)
    pids_limit: int = Field(512, ge=16)

    @model_validator(mode="before")
    @classmethod
    def _toolchain_images_by_name(cls, data: Any) -> Any:
        # ``<toolchain>_images`` (the settings' names before toolchains were plugins) is one
        # toolchain's entry of ``toolchain_images``: a key per toolchain, none named here
        if not isinstance(data, dict):
            return data
        named = {
            key: found[1] for key in data if (found := TOOLCHAIN_IMAGES_KEY.match(key)) is not None
        }
        if not named:
            return data
        merged = dict(data.get("toolchain_images") or {})
        for key, toolchain in named.items():
            value = data[key]
            merged.setdefault(toolchain, json.loads(value) if isinstance(value, str) else value)
        rest = {k: v for k, v in data.items() if k not in named}
        return {**rest, "toolchain_images": merged}


class ExtractSettings(Section):
    max_patch_bytes: int = Field(
        1_000_000, ge=1, description="PR diffs larger than this are rejected"
    )
    repos_dir: Path | None = Field(
        None, description="partial clones, reused across PRs; unset = <worker.data_dir>/repos"
    )


ATTEMPTS_KEY = re.compile(r"^max_(?!toolchain_)[a-z][a-z0-9]*_attempts$")


class ValidateSettings(Section):
    runs: int = Field(3, ge=1, description="test runs with the fix (flaky tests are dropped)")
    test_timeout_seconds: float = Field(900.0, gt=0, description="per run of the test command")
    concurrency: int = Field(
        default_factory=lambda: validations_for_machine(),
        ge=1,
        description="validations at once; default: fitted to this machine's cores and memory "
        "(one more than the cores, one per 4 GiB, at most 8): an image build waits on the "
        "network while another PR's tests use the CPU",
    )
    max_toolchain_attempts: int = Field(
        2,
        ge=1,
        description="toolchain versions (recipes) tried per PR when installing or collecting "
        "fails; also written max_<toolchain>_attempts, its name of old",
    )

    @model_validator(mode="before")
    @classmethod
    def _attempts_by_name(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        named = [k for k in data if ATTEMPTS_KEY.match(k)]
        rest = {k: v for k, v in data.items() if k not in named}
        if named and "max_toolchain_attempts" not in rest:
            rest["max_toolchain_attempts"] = data[named[0]]
        return rest

    overrides_file: Path | None = Field(
        None, description="per-repository install/test overrides (YAML; they win over inference)"
    )
    recipe_memory: bool = Field(
        True,
        description="remember the recipes that worked (recipes.memory and "
        "<worker.data_dir>/recipes.sqlite) and try them first for a repository's later PRs",
    )
    recipe_refresh_seconds: float = Field(
        60.0, gt=0, description="how often a worker reads what other workers remembered"
    )


class ExportSettings(Section):
    output_dir: Path = Field(
        Path("generated-swe"),
        description="task directories (owner-repo-N/) and dataset.jsonl of pipeline version 1; "
        "version N writes beside it, to <output_dir>-vN",
    )
    registry: str | None = Field(
        None,
        description="HOST[:PORT][/NAMESPACE]: push each exported task's instance image there "
        "(as `swe-stream images push` does) and name it in its rows (image_name, "
        "docker_image); credentials are Docker's own (docker login). Unset: no push",
    )


class HarnessSettings(Section):
    tasks_dir: Path | None = Field(
        None, description="where requested tasks are found; unset = export.output_dir"
    )
    output_dir: Path = Field(
        Path("harness-results"), description="report.json, model.patch and logs per request"
    )
    agent_command: str | None = Field(
        None,
        description="set: every exported task is also evaluated with this agent command "
        "(and agent_dir), besides the harness.requests topic",
    )
    agent_dir: Path | None = None
    agent_timeout_seconds: float = Field(600.0, gt=0)
    test_timeout_seconds: float = Field(
        120.0, gt=0, description="per check; one run of a task's test files gets it per check"
    )
    isolate_tests: bool = Field(
        False,
        description="run every check command alone (a test process per id) instead of grading "
        "them from one run of the task's test files",
    )
    agent_network: Literal["none", "model", "registries", "all"] = Field(
        "none",
        description="what the agent's container reaches: none; model (only the model's API: "
        "agent_model_hosts, else llm.base_url's host); registries (the package registries); "
        "all (the whole network: the agent can fetch the upstream fix)",
    )
    agent_model_hosts: list[str] = Field(
        default_factory=list,
        description="host[:port] of the model APIs an agent reaches under agent_network=model "
        "(default port 443); empty: llm.base_url's",
    )


class TestgenSettings(Section):
    __test__ = False  # a settings section, not a pytest test class
    mode: Literal["off", "fallback", "always"] = Field(
        "fallback",
        description="agentic test generation: when the PR's tests prove nothing, or always "
        "(needs an LLM key; without one it is off, and the log says so)",
    )
    max_turns: int = Field(200, ge=1)
    max_tokens: int = Field(2_000_000, ge=1, description="prompt + completion tokens per task")
    max_seconds: float = Field(1800.0, gt=0, description="wall time per task")
    command_timeout_seconds: float = Field(120.0, gt=0, description="per `shell` command")
    output_limit_bytes: int = Field(
        8000,
        ge=200,
        description="`shell` stdout and stderr sent back, each at most (first and last halves)",
    )
    reply_max_tokens: int = Field(4000, ge=1, description="completion tokens per model reply")
    max_context_chars: int = Field(
        400_000, ge=10_000, description="older tool results are elided past this"
    )


# the hosts of Debian's archive, which every image's apt reaches; the languages' package
# registries are each language's own (``Language.registries``)
DEBIAN_REGISTRIES = ("deb.debian.org", "security.debian.org", "*.debian.org")


class SetupAgentSettings(Section):
    """The environment-setup agent: asked when no heuristic, override or remembered recipe
    makes a PR's tests run (needs an LLM key; budgets at zero turn it off)."""

    mode: Literal["off", "fallback"] = Field(
        "fallback", description="fallback: when the recipes tried do not make the tests run"
    )
    max_turns: int = Field(30, ge=0, description="model replies per PR; 0 = no agent")
    max_tokens: int = Field(
        400_000, ge=0, description="prompt + completion tokens per PR; 0 = no agent"
    )
    max_seconds: float = Field(
        1800.0, ge=0, description="wall time per PR, verification builds included; 0 = no agent"
    )
    max_submissions: int = Field(4, ge=1, description="recipes verified per PR")
    command_timeout_seconds: float = Field(300.0, gt=0, description="per `shell` command")
    output_limit_bytes: int = Field(
        6000, ge=200, description="`shell` stdout and stderr sent back, each at most"
    )
    reply_max_tokens: int = Field(4000, ge=1, description="completion tokens per model reply")
    max_context_chars: int = Field(
        200_000, ge=10_000, description="older tool results are elided past this"
    )
    memory_mb: int = Field(4096, ge=256, description="memory limit of the agent's sandbox")
    cpus: float = Field(2.0, gt=0)
    pids_limit: int = Field(512, ge=16)
    disk_mb: int = Field(
        2048,
        ge=64,
        description="what the agent's commands may write in all (checked after every command; "
        "past it the agent stops); each file is also bounded by it",
    )
    registries: StrList | None = Field(
        None,
        description="hosts its sandbox may reach through its proxy (name or *.suffix); "
        "nothing else of the network or of the host is; unset = Debian's archive and every "
        "registered language's package registries",
    )


# The YAML file for the settings being built; a ContextVar so that concurrent loads
# (tests, threads) never see each other's file.
_config_file: ContextVar[Path | None] = ContextVar("swe_stream_config_file", default=None)


class YamlFileSource(PydanticBaseSettingsSource):
    """The ``--config`` YAML file; ``yaml.safe_load`` so tags never construct objects."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ returns the whole mapping at once

    def __call__(self) -> dict[str, Any]:
        path = _config_file.get()
        return read_yaml_config(path) if path is not None else {}


class WellKnownSecretsSource(PydanticBaseSettingsSource):
    """``GITHUB_TOKEN`` / ``OPENROUTER_API_KEY``, below the ``SWE_STREAM_*`` variables."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError

    def __call__(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for variable, (section, name) in WELL_KNOWN_SECRETS.items():
            value = os.environ.get(variable)
            if value:
                found.setdefault(section, {})[name] = value
        return found


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="_",
        env_nested_max_split=1,
        extra="forbid",
        validate_default=True,
    )

    pipeline_version: int = Field(1, ge=1, description="stamped on every record and ledger entry")
    kafka: KafkaSettings = KafkaSettings()
    worker: WorkerSettings = WorkerSettings()
    gharchive: GHArchiveSettings = GHArchiveSettings()
    github: GitHubSettings = GitHubSettings()
    prefilter: PrefilterSettings = PrefilterSettings()
    enrich: EnrichSettings = EnrichSettings()
    llm: LLMSettings = LLMSettings()
    classify: ClassifySettings = ClassifySettings()
    score: ScoreSettings = ScoreSettings()
    docker: DockerSettings = DockerSettings()
    extract: ExtractSettings = ExtractSettings()
    validation: ValidateSettings = ValidateSettings()
    testgen: TestgenSettings = TestgenSettings()
    setup_agent: SetupAgentSettings = SetupAgentSettings()
    export: ExportSettings = ExportSettings()
    harness: HarnessSettings = HarnessSettings()

    @property
    def export_dir(self) -> Path:
        """Where this pipeline version exports: ``export.output_dir`` for version 1 and
        ``<output_dir>-v<N>`` for version N, so re-processing under a new version never
        touches an older version's dataset."""
        base = self.export.output_dir
        if self.pipeline_version == 1:
            return base
        resolved = base.resolve()
        return resolved.with_name(f"{resolved.name}-v{self.pipeline_version}")

    @model_validator(mode="after")
    def _group_per_version(self) -> Settings:
        if not self.worker.app_id:
            self.worker.app_id = f"swe-stream-v{self.pipeline_version}"
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: CLI flags (init kwargs) > SWE_STREAM_* > GITHUB_TOKEN & co > YAML.
        assert isinstance(env_settings, EnvSettingsSource)
        return (
            init_settings,
            env_settings,
            WellKnownSecretsSource(settings_cls),
            YamlFileSource(settings_cls),
        )

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets masked (for display only)."""
        return self.model_dump(mode="json")


class ConfigFileError(ValueError):
    """The YAML config file is missing, unreadable or not a mapping."""


# A settings file or a workspace.yaml holds at most thousands of values (test lists).
MAX_YAML_VALUES = 1_000_000


def safe_load_yaml(text: str, max_values: int = MAX_YAML_VALUES) -> Any:
    """``yaml.safe_load`` (tags never construct objects), but a ValueError for a document nested
    too deeply for the parser or whose aliases expand to more than ``max_values`` values (a
    "billion laughs"): aliases share one object, so loading one is instant, but whatever walks
    the result (validation, the repr in an error message) would take hours."""
    try:
        # the safe loader (no tag constructs an object), in C where PyYAML was built with it
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except RecursionError:
        raise ValueError("YAML nested too deeply to parse") from None
    except yaml.MarkedYAMLError as exc:
        # libyaml 0.2.6 stops at 1000 levels itself, a scanner error rather than a recursion
        if "nesting depth" in str(exc.problem):
            raise ValueError("YAML nested too deeply to parse") from None
        raise
    pending, seen = [data], 0
    while pending:
        item = pending.pop()
        seen += 1
        if seen > max_values:
            raise ValueError(f"YAML expands to more than {max_values} values (alias bomb?)")
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return data


def read_yaml_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"config file {path} is not UTF-8 text: {exc}") from None
    try:
        data = safe_load_yaml(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise ConfigFileError(f"config file {path} is not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"config file {path} must hold a mapping, not {type(data).__name__}")
    return data


def load_settings(
    config_file: Path | str | None = None, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Build the effective settings. ``overrides`` are CLI flags, nested by section."""
    if config_file is None and os.environ.get(CONFIG_ENV):
        config_file = os.environ[CONFIG_ENV]
    token = _config_file.set(Path(config_file) if config_file else None)
    try:
        return Settings(**_drop_none(overrides or {}))
    finally:
        _config_file.reset(token)


def _drop_none(data: Mapping[str, Any]) -> dict[str, Any]:
    """CLI flags that were not given arrive as None and must not shadow lower layers."""
    cleaned: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            nested = _drop_none(value)
            if nested:
                cleaned[key] = nested
        elif value is not None:
            cleaned[key] = value
    return cleaned
