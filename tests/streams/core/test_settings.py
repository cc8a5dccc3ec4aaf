"""Settings precedence (defaults < YAML < env < CLI) and secret masking."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from streams.core.settings import (
    ConfigFileError,
    ValidateSettings,
    load_settings,
    validations_for_machine,
)
from tests.conftest import SWE_STREAM

pytestmark = pytest.mark.unit

FAKE_TOKEN = "ghp_FAKEtoken1234567890abcdefABCDEF0000"
FAKE_LLM_KEY = "sk-or-v1-FAKEFAKEFAKE0123456789"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("SWE_STREAM_") or name in {"GITHUB_TOKEN", "OPENROUTER_API_KEY"}:
            monkeypatch.delenv(name)


def write_yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "swe-stream.yaml"
    path.write_text(text)
    return path


def test_defaults() -> None:
    settings = load_settings()
    assert settings.kafka.bootstrap is None  # embedded broker
    assert settings.kafka.idempotence == "auto"
    assert settings.gharchive.base_url == "https://data.gharchive.org"
    assert settings.github.token is None


def test_each_layer_overrides_the_one_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_yaml(
        tmp_path,
        "kafka:\n  bootstrap: yaml:9092\n  partitions: 6\nworker:\n  web_port: 7001\n"
        "  metrics_port: 7002\npipeline_version: 2\n",
    )
    monkeypatch.setenv("SWE_STREAM_KAFKA_BOOTSTRAP", "env:9092")
    monkeypatch.setenv("SWE_STREAM_WORKER_WEB_PORT", "8001")
    settings = load_settings(config, {"kafka": {"bootstrap": "cli:9092", "partitions": None}})
    assert settings.kafka.bootstrap == "cli:9092"  # CLI > env > YAML
    assert settings.worker.web_port == 8001  # env > YAML
    assert settings.kafka.partitions == 6  # YAML > default; an absent CLI flag shadows nothing
    assert settings.worker.metrics_port == 7002
    assert settings.pipeline_version == 2


def test_config_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWE_STREAM_CONFIG", str(write_yaml(tmp_path, "pipeline_version: 5\n")))
    assert load_settings().pipeline_version == 5


def test_well_known_secret_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("OPENROUTER_API_KEY", FAKE_LLM_KEY)
    settings = load_settings()
    assert settings.github.token is not None
    assert settings.github.token.get_secret_value() == FAKE_TOKEN
    assert FAKE_TOKEN not in repr(settings) and FAKE_TOKEN not in str(settings.masked())
    monkeypatch.setenv("SWE_STREAM_GITHUB_TOKEN", "ghp_prefixed")
    assert load_settings().github.token.get_secret_value() == "ghp_prefixed"  # type: ignore[union-attr]


def test_yaml_tags_are_refused(tmp_path: Path) -> None:
    config = write_yaml(tmp_path, "pipeline_version: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigFileError, match="not valid YAML"):
        load_settings(config)


@pytest.mark.parametrize(
    "text, match",
    [
        ("- a list\n", "must hold a mapping"),
        ("kafka:\n  partitions: many\n", "partitions"),
        ("kafak:\n  bootstrap: x\n", "kafak"),  # typo: extra keys are errors, not ignored
    ],
)
def test_bad_config_files_give_clear_errors(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises((ConfigFileError, ValidationError), match=match):
        load_settings(write_yaml(tmp_path, text))


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="cannot read"):
        load_settings(tmp_path / "absent.yaml")


def test_config_show_masks_secrets(tmp_path: Path) -> None:
    config = write_yaml(tmp_path, f"llm:\n  api_key: {FAKE_LLM_KEY}\n")
    result = subprocess.run(
        [SWE_STREAM, "config", "show", "--config", str(config)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": FAKE_TOKEN},
        timeout=60,
        check=True,
    )
    assert FAKE_TOKEN not in result.stdout + result.stderr
    assert FAKE_LLM_KEY not in result.stdout + result.stderr
    assert "token: '**********'" in result.stdout
    assert "api_key: '**********'" in result.stdout
    assert "bootstrap: null" in result.stdout


def test_invalid_settings_exit_with_a_clear_message(tmp_path: Path) -> None:
    config = write_yaml(tmp_path, "kafka:\n  partitions: 0\n")
    result = subprocess.run(
        [SWE_STREAM, "--config", str(config), "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "invalid settings" in result.stderr and "partitions" in result.stderr


@pytest.mark.parametrize(
    ("cores", "memory_gib", "expected"),
    [(2, 23, 3), (16, 16, 4), (1, 64, 2), (64, 512, 8), (4, 2, 1)],
)
def test_validations_at_once_fit_the_machines_cores_and_memory(
    cores: int, memory_gib: int, expected: int
) -> None:
    assert validations_for_machine(cores, memory_gib << 30) == expected


def test_the_default_validation_concurrency_is_this_machines_and_a_setting_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ValidateSettings().concurrency == validations_for_machine()
    monkeypatch.setenv("SWE_STREAM_VALIDATION_CONCURRENCY", "5")
    assert load_settings().validation.concurrency == 5
