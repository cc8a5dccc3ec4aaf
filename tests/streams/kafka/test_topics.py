"""The topic catalog, and ``swe-stream topics`` against the embedded broker."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from schemas import ALL_RECORD_MODELS, DeadLetter, DeadLetterReplay, Record
from streams.core.settings import KafkaSettings
from streams.kafka.client import TopicAdmin, format_configs
from streams.kafka.topics import ALL_TOPICS, DLQ_TOPICS, LEDGER, PR_KEY, PRIMARY_TOPICS, topic
from tests.conftest import SWE_STREAM


@pytest.mark.unit
def test_catalog_is_consistent() -> None:
    names = [t.name for t in ALL_TOPICS]
    assert len(names) == len(set(names))
    assert {t.value_model for t in PRIMARY_TOPICS} == set(ALL_RECORD_MODELS) - {
        DeadLetter,
        DeadLetterReplay,
    }
    held = {model for t in ALL_TOPICS for model in (t.value_model, *t.also_holds)}
    assert held == set(ALL_RECORD_MODELS)  # every record model lives in some topic
    for spec in ALL_TOPICS:
        assert issubclass(spec.value_model, Record)
    # co-partitioning: every PR-keyed topic uses the shared partition count
    for spec in PRIMARY_TOPICS:
        if spec.key == PR_KEY:
            assert spec.partitions is None, spec.name
    compacted = {"swe.ledger", "gharchive.hours", "recipes.memory"}
    assert {t.name for t in ALL_TOPICS if t.compacted} == compacted
    # every topic a stage consumes has a DLQ, and the DLQs hold dead letters
    assert {t.name for t in DLQ_TOPICS} == {t.name + ".dlq" for t in PRIMARY_TOPICS if t.has_dlq}
    assert all(t.value_model is DeadLetter for t in DLQ_TOPICS)
    assert all(t.also_holds == (DeadLetterReplay,) for t in DLQ_TOPICS)
    assert topic("pr.candidates").dlq_name == "pr.candidates.dlq"


@pytest.mark.unit
def test_unknown_topic_and_missing_dlq_are_clear_errors() -> None:
    with pytest.raises(KeyError, match=r"unknown topic .pr\.nope."):
        topic("pr.nope")
    with pytest.raises(KeyError, match="no DLQ"):
        _ = topic("swe.ledger").dlq_name


async def cluster_state(bootstrap: str) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    async with TopicAdmin(bootstrap, KafkaSettings()) as admin:
        partitions = await admin.partitions()
        wanted = {t.name: t.configs for t in ALL_TOPICS if t.name in partitions}
        return partitions, await admin.configs(wanted)


@pytest.mark.integration
def test_topics_create_is_complete_and_idempotent(bootstrap: str) -> None:
    command = [SWE_STREAM, "topics", "create", "--bootstrap", bootstrap, "--partitions", "3"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    partitions, configs = asyncio.run(cluster_state(bootstrap))
    for spec in ALL_TOPICS:
        assert partitions[spec.name] == (spec.partitions or 3), spec.name
        for key, value in spec.configs.items():
            assert configs[spec.name].get(key) == value, spec.name
    assert configs["swe.ledger"]["cleanup.policy"] == "compact"
    assert configs["gharchive.hours"]["cleanup.policy"] == "compact"
    assert first.stdout.count("created ") == len(ALL_TOPICS)

    second = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("exists ") == len(ALL_TOPICS)
    assert "created " not in second.stdout
    assert asyncio.run(cluster_state(bootstrap)) == (partitions, configs)


@pytest.mark.integration
def test_partition_mismatch_is_reported(bootstrap: str) -> None:
    base = [SWE_STREAM, "topics", "create", "--bootstrap", bootstrap, "pr.enriched"]
    assert (
        subprocess.run([*base, "--partitions", "2"], capture_output=True, timeout=120).returncode
        == 0
    )
    result = subprocess.run(
        [*base, "--partitions", "5"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "pr.enriched: has 2 partitions, catalog says 5" in result.stderr


@pytest.mark.integration
def test_topics_list_and_describe(bootstrap: str) -> None:
    subprocess.run(
        [SWE_STREAM, "topics", "create", "--bootstrap", bootstrap, "swe.ledger"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    listing = subprocess.run(
        [SWE_STREAM, "topics", "list", "--bootstrap", bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "present   swe.ledger" in listing
    assert "missing   pr.candidates " in listing
    described = subprocess.run(
        [SWE_STREAM, "topics", "describe", "--bootstrap", bootstrap, "swe.ledger"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "value:      schemas.LedgerEntry" in described
    assert "key:        owner/repo#number" in described
    configs = format_configs(LEDGER.configs)  # the catalog's, and what the cluster has
    assert f"configs:    {configs} (cluster: {configs})" in described
