"""The stream graph as ``pipeline_stages`` builds it from default settings (no broker, no
Docker, no network: clients connect lazily): graph order, ``STAGE_ORDER``, the topic catalog,
``select_stages`` and ``make_validator``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from streams.core.settings import Settings
from streams.kafka.topics import ALL_TOPICS, HARNESS_REQUESTS, PULL_REQUEST_EVENTS
from streams.pipeline.ledger import Ledger, SinkLedgerStore
from streams.pipeline.sinks import MemorySink
from streams.pipeline.stage import Stage
from streams.runtime.topology import (
    STAGE_ORDER,
    StageResources,
    make_validator,
    pipeline_stages,
    select_stages,
)

# the topics fed from outside the stages: ingest's events and users' harness requests
EXTERNAL_INPUTS = {PULL_REQUEST_EVENTS.name, HARNESS_REQUESTS.name}


@pytest.fixture(autouse=True)
def no_user_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Defaults only: no config file, no SWE_STREAM_* or well-known secret variables, and a
    scratch working directory for the relative default paths."""
    for name in list(os.environ):
        if name.startswith("SWE_STREAM_") or name in {"GITHUB_TOKEN", "OPENROUTER_API_KEY"}:
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def resources() -> StageResources:
    ledger = Ledger(SinkLedgerStore(MemorySink()), pipeline_version=1)
    return StageResources(ledger, lambda name: {})


def build(**overrides: Any) -> list[Stage[Any]]:
    return pipeline_stages(Settings(**overrides), resources())


# the default graph, and the one with an agent configured (adds harness-exported)
GRAPHS = [{}, {"harness": {"agent_command": "python -m baseagent"}}]


@pytest.mark.unit
@pytest.mark.parametrize("overrides", GRAPHS)
def test_each_stage_reads_an_external_input_or_an_earlier_stages_output(
    overrides: dict[str, Any],
) -> None:
    stages = build(**overrides)
    assert stages, "the pipeline has no stages"
    written = set(EXTERNAL_INPUTS)
    for stage in stages:
        assert stage.source.name in written, (
            f"{stage.name} reads {stage.source.name}, which neither comes from outside nor "
            f"is written by a stage before it ({[s.name for s in stages]})"
        )
        if stage.output is not None:
            written.add(stage.output.name)


@pytest.mark.unit
@pytest.mark.parametrize("overrides", GRAPHS)
def test_stage_order_is_the_mining_stages_in_graph_order(overrides: dict[str, Any]) -> None:
    names = [stage.name for stage in build(**overrides)]
    assert len(names) == len(set(names)), f"duplicate stage names: {names}"
    assert tuple(name for name in names if name in STAGE_ORDER) == STAGE_ORDER


@pytest.mark.unit
@pytest.mark.parametrize("overrides", GRAPHS)
def test_every_topic_named_is_in_the_catalog(overrides: dict[str, Any]) -> None:
    catalog = {spec.name for spec in ALL_TOPICS}
    for stage in build(**overrides):
        assert stage.source.name in catalog, stage.name
        assert stage.source.has_dlq, f"{stage.name} reads {stage.source.name}, which has no DLQ"
        assert stage.source.dlq_name in catalog, stage.name
        if stage.output is not None:
            assert stage.output.name in catalog, stage.name
    assert EXTERNAL_INPUTS.issubset(catalog)


@pytest.mark.unit
def test_the_agent_setting_adds_the_exported_harness_stage() -> None:
    default = [stage.name for stage in build()]
    with_agent = [stage.name for stage in build(harness={"agent_command": "true"})]
    assert set(with_agent) - set(default) == {"harness-exported"}


@pytest.mark.unit
def test_select_stages() -> None:
    stages = build()
    assert select_stages(stages, []) == stages
    assert [s.name for s in select_stages(stages, ["score", "enrich"])] == ["enrich", "score"]
    with pytest.raises(ValueError, match="nosuchstage") as raised:
        select_stages(stages, ["enrich", "nosuchstage"])
    assert "prefilter" in str(raised.value)  # names what the pipeline has


@pytest.mark.unit
def test_the_worker_stages_setting_selects_and_checks_the_stages() -> None:
    selected = build(worker={"stages": ["classify", "prefilter"]})
    assert [s.name for s in selected] == ["prefilter", "classify"]
    with pytest.raises(ValueError, match="nosuchstage"):
        build(worker={"stages": ["nosuchstage"]})


@pytest.mark.unit
def test_the_validators_clones_follow_the_settings(tmp_path: Path) -> None:
    default = make_validator(Settings())
    assert default.repos.root == (Path("data") / "repos").absolute()

    data_dir = make_validator(Settings(worker={"data_dir": str(tmp_path / "work")}))
    assert data_dir.repos.root == tmp_path / "work" / "repos"

    explicit = Settings(
        worker={"data_dir": str(tmp_path / "work")},
        extract={"repos_dir": str(tmp_path / "clones")},
    )
    validator = make_validator(explicit)
    assert validator.repos.root == tmp_path / "clones"
    assert validator.docker == explicit.docker
    assert validator.settings == explicit.validation
    assert validator.pipeline_version == explicit.pipeline_version


@pytest.mark.unit
def test_building_the_stages_touches_no_docker_and_creates_nothing(tmp_path: Path) -> None:
    build()
    validator = make_validator(Settings())
    assert validator._client is None  # the Docker client is made on first use
    assert list(tmp_path.iterdir()) == []


@pytest.mark.unit
def test_what_is_missing_is_said_once_when_the_stages_are_built(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("DEBUG", logger="swe_stream"):
        build()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("no GitHub token") and "60 requests an hour" in warnings[0]
    assert warnings[1].startswith("no LLM API key") and "setup agent are off" in warnings[1]
    caplog.clear()
    with caplog.at_level("WARNING", logger="swe_stream"):
        build(github={"token": "ghp_test"}, llm={"api_key": "sk-or-test"})
    assert [r for r in caplog.records if r.levelname == "WARNING"] == []


@pytest.mark.unit
def test_each_pr_stage_knows_the_stages_at_and_after_it() -> None:
    """What a stage skips as done (``Stage.done_at``): the PR stages from it on, in graph
    order; the harness stages (they evaluate, they mine nothing) none."""
    stages = {stage.name: stage for stage in pipeline_stages(Settings(), resources())}
    assert stages["validate"].done_at == {"validate", "score", "export"}
    assert stages["prefilter"].done_at == set(STAGE_ORDER)
    assert stages["export"].done_at == {"export"}
    assert all(not s.done_at for name, s in stages.items() if name not in STAGE_ORDER)
