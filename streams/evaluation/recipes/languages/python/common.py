"""What several of the Python readers share: the package metadata they gather (``Metadata``,
filled by pyproject.toml, setup.cfg and setup.py in that order: the first to state a value
wins), and small readings of values (version lists, INI lists, shell words, Python source).
"""

from __future__ import annotations

import ast
import shlex
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streams.evaluation.recipes.languages import version_key
from streams.evaluation.recipes.sources.loaders import short_error
from streams.evaluation.recipes.sources.tree import SourceTree

MAX_DEPTH = 30  # nesting of includes, names followed, expressions evaluated


@dataclass
class Metadata:
    """What the readers found so far (mutable; frozen into ProjectFacts at the end)."""

    build_backend: str | None = None
    build_requires: list[str] = field(default_factory=list)
    project_name: str | None = None
    requires_python: str | None = None
    classifier_pythons: list[str] = field(default_factory=list)
    dependencies: list[str] | None = None
    extras: dict[str, list[str]] = field(default_factory=dict)
    dependency_groups: dict[str, list[str]] = field(default_factory=dict)
    poetry_groups: dict[str, list[str]] = field(default_factory=dict)
    pdm_dev_groups: dict[str, list[str]] = field(default_factory=dict)
    tests_require: list[str] = field(default_factory=list)
    setup_requires: list[str] = field(default_factory=list)
    scm_version: bool = False
    c_extensions: bool = False
    test_suite: bool = False
    extra_requirement_refs: list[str] = field(default_factory=list)

    def set_dependencies(self, deps: list[str]) -> None:
        if self.dependencies is None:
            self.dependencies = deps

    def add_extras(self, extras: Mapping[str, list[str]]) -> None:
        for name, reqs in extras.items():
            self.extras.setdefault(name, reqs)

    def add_classifiers(self, classifiers: Iterable[str]) -> None:
        for classifier in classifiers:
            version = classifier_python(classifier)
            if version and version not in self.classifier_pythons:
                self.classifier_pythons.append(version)


def dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def sorted_versions(versions: Iterable[str]) -> list[str]:
    """Oldest first, compared as versions (3.9 before 3.10, 3.10 before 3.10.1); a string that
    is no version comes after every version, in text order."""
    return sorted(set(versions), key=version_key)


def classifier_python(classifier: str) -> str | None:
    parts = [part.strip() for part in classifier.split("::")]
    if len(parts) != 3 or parts[0] != "Programming Language" or parts[1] != "Python":
        return None
    pieces = parts[2].split(".")
    if len(pieces) == 2 and all(piece.isdigit() for piece in pieces):
        return parts[2]
    return None


def nonblank_lines(value: str) -> list[str]:
    stripped = (line.strip() for line in value.splitlines())
    return [line for line in stripped if line and not line.startswith("#")]


def split_list(value: str, separators: str = ",") -> list[str]:
    items = [value]
    for separator in ["\n", *separators]:
        items = [piece for item in items for piece in item.split(separator)]
    return [item.strip() for item in items if item.strip()]


def truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in {"1", "true", "yes", "on"}


def shell_words(text: str, where: str, tree: SourceTree) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        tree.problem(f"{where}: unbalanced quotes in {text[:80]!r}; split on spaces")
        return text.split()


def parse_python(tree: SourceTree, path: str) -> ast.Module | None:
    text = tree.text(path)
    if text is None:
        return None
    try:
        # a repository's odd escapes ("\e") are its own affair, not warnings of this process
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        tree.problem(f"{path}: not valid Python ({type(exc).__name__}: {short_error(exc)})")
        return None
