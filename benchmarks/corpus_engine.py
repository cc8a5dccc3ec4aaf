"""What the corpus benchmarks share: where the corpus is, and a validator over its remotes."""

from __future__ import annotations

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
