"""The JDKs a tree's CI sets up: ``actions/setup-java``'s ``java-version`` (or
``java-version-file``'s content), with ``${{ matrix.X }}`` read from the job's matrix."""

from __future__ import annotations

from streams.evaluation.recipes.languages.java.pom import lowest_of_range
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.ci import matrix_values, read_ci
from streams.evaluation.recipes.sources.tree import SourceTree


def _values(written: object, matrix: object) -> list[str]:
    text = str(written or "").strip()
    if text.startswith("${{") and text.endswith("}}"):
        expression = text[3:-2].strip()
        if expression.startswith("matrix."):
            return matrix_values(matrix, expression.removeprefix("matrix."))
        return []
    return [line.strip() for line in text.replace(",", "\n").splitlines() if line.strip()]


def ci_java_versions(tree: TreeFiles) -> list[int]:
    """The JDK majors the CI's setup-java steps install, each once, in the order read."""
    source = SourceTree(tree.names, tree.read, tree.why_unreadable)
    found: dict[int, None] = {}
    for job in read_ci(source).jobs:
        for step in job.steps:
            if not (step.uses or "").startswith("actions/setup-java"):
                continue
            written = list(_values(step.with_.get("java-version"), job.matrix))
            version_file = step.with_.get("java-version-file")
            if isinstance(version_file, str):
                data = tree.read(version_file, 4096)
                if data is not None:
                    written.append(data.decode("utf-8", "replace").strip())
            for value in written:
                level = lowest_of_range(value)
                if level is not None:
                    found[level] = None
    return list(found)
