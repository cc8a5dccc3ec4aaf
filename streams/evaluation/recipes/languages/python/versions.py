"""Which Python a repository's tests run on, at one commit: a pure decision.

The Pythons there are base images for (``docker.python_images``) are the candidates. What the
repository says narrows them, strongest first:

1. ``requires-python`` (or ``python_requires``): a candidate outside it is never tried;
2. the versions it declares it is tested on (classifiers, tox envlist, nox sessions, the CI
   matrix): candidates newer than the newest declared one come last (the project never ran
   there; deprecations of newer Pythons break old test suites);
3. the PR's date: a Python released after the PR was merged comes after every one released
   before it (the dependencies of that time may not install on it).

The result is an order to try: the first is the best guess, the others are fallbacks for when
the install or the test collection fails on it (nearest first, older before newer).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from streams.evaluation.recipes.interpreter_order import best_first

# first final release of each CPython minor version (python.org)
RELEASED: dict[str, datetime] = {
    "3.6": datetime(2016, 12, 23, tzinfo=UTC),
    "3.7": datetime(2018, 6, 27, tzinfo=UTC),
    "3.8": datetime(2019, 10, 14, tzinfo=UTC),
    "3.9": datetime(2020, 10, 5, tzinfo=UTC),
    "3.10": datetime(2021, 10, 4, tzinfo=UTC),
    "3.11": datetime(2022, 10, 24, tzinfo=UTC),
    "3.12": datetime(2023, 10, 2, tzinfo=UTC),
    "3.13": datetime(2024, 10, 7, tzinfo=UTC),
    "3.14": datetime(2025, 10, 7, tzinfo=UTC),
}


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def allowed_by(requires_python: str | None, python: str) -> bool:
    """Whether ``python`` (``3.11``) satisfies ``requires_python``; an unreadable specifier
    allows everything (it is reported where it is read)."""
    if not requires_python:
        return True
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return True
    # a minor version satisfies the specifier when one of its releases does: ">=3.9.1" holds
    # for 3.9 (3.9.2 is what the base image has), "<3.10" holds for 3.9
    return any(spec.contains(f"{python}.{patch}", prereleases=True) for patch in (0, 5, 20))


def python_order(
    available: Iterable[str],
    requires_python: str | None = None,
    declared: Iterable[str] = (),
    merged_at: datetime | None = None,
) -> list[str]:
    """The Pythons to try, best first (see the module's docstring). Empty when
    ``requires_python`` excludes every one available."""
    candidates = sorted(
        (p for p in set(available) if _version(p) is not None), key=lambda p: Version(p)
    )
    candidates = [p for p in candidates if allowed_by(requires_python, p)]
    if not candidates:
        return []
    declared_versions = [v for v in (_version(d) for d in declared) if v is not None]
    newest_declared = max(declared_versions) if declared_versions else None
    return best_first(candidates, Version, newest_declared, RELEASED, merged_at)
