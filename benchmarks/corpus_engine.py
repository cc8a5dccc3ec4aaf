"""What the corpus benchmarks share: where the corpus is, a validator over its remotes, and
how they show their progress."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from streams.clients.git import RepoCache
from streams.core.settings import DockerSettings, ValidateSettings
from streams.evaluation.validator import Validator
from streams.offline.corpus import Corpus

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "fixtures" / "corpus"


def corpus_validator(
    corpus: Corpus, workdir: Path, client: Any, docker: DockerSettings
) -> Validator:
    """A validator that clones ``corpus``'s repositories from its remotes into ``workdir``."""
    return Validator(
        RepoCache(workdir / "repos", corpus.git_url_template),
        lambda: client,
        docker,
        ValidateSettings(),
        1,
    )


def show_progress() -> None:
    """Log warnings and the progress lines (image builds with their step and elapsed time,
    tasks done and the ETA), which say without a terminal what the live view draws on one."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("swe_stream.progress").setLevel(logging.INFO)
