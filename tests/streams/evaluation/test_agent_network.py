"""The agent's network modes as they are read: the model endpoints from a URL or from what the
user names, a request of before the modes (a bool), and the CLI's flag."""

from __future__ import annotations

import pytest

from schemas.harness import AgentSpec
from streams.cli.main import build_parser
from streams.evaluation.egress import endpoint, model_endpoints

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://openrouter.ai/api/v1", ("openrouter.ai", 443)),
        ("http://172.17.0.1:8080/v1", ("172.17.0.1", 8080)),
        ("http://llm.internal/v1", ("llm.internal", 80)),
        ("llm.internal", ("llm.internal", 443)),
        ("LLM.Internal.:8443", ("llm.internal", 8443)),
        ("[fd00::5]:9000", ("fd00::5", 9000)),
    ],
)
def test_an_endpoint_is_read_from_a_url_or_host_and_port(
    text: str, expected: tuple[str, int]
) -> None:
    assert endpoint(text) == expected


@pytest.mark.parametrize("text", ["", "llm:port", "http://", "a b:1", "host:99999"])
def test_what_names_no_endpoint_is_an_error(text: str) -> None:
    with pytest.raises(ValueError, match="not"):
        endpoint(text)


def test_the_named_hosts_win_over_the_llm_base_url() -> None:
    assert model_endpoints([], "https://openrouter.ai/api/v1") == (("openrouter.ai", 443),)
    assert model_endpoints(["a.example", "b.example:8000"], "https://openrouter.ai/api/v1") == (
        ("a.example", 443),
        ("b.example", 8000),
    )


@pytest.mark.parametrize(
    ("given", "mode"),
    [(True, "all"), (False, "none"), ("model", "model"), ("registries", "registries")],
)
def test_a_request_of_before_the_modes_still_reads(given: object, mode: str) -> None:
    assert AgentSpec.model_validate({"name": "a", "command": "c", "network": given}).network == mode


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="network"):
        AgentSpec.model_validate({"name": "a", "command": "c", "network": "some"})


@pytest.mark.parametrize(
    ("flags", "mode"),
    [([], None), (["--agent-network"], "all"), (["--agent-network", "model"], "model")],
)
def test_the_bare_flag_is_all_of_the_network(flags: list[str], mode: str | None) -> None:
    args = build_parser().parse_args(["harness", "--input", "t", "--agent-dir", "a", *flags])
    assert args.agent_network == mode


def test_the_cli_refuses_a_mode_it_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["harness", "--input", "t", "--agent-network", "some"])
    assert "invalid choice" in capsys.readouterr().err
