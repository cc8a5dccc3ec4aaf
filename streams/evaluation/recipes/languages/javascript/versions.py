"""Which Node.js major a JavaScript / TypeScript repository's tests run on: a pure decision,
the counterpart of ``python_versions``.

The candidates are the majors there are base images for. The base images are Debian suites
with Debian's own ``nodejs`` package (``DEBIAN_NODE``: bookworm's is 18, trixie's 20, forky's
24, checked with ``apt-cache policy nodejs`` in each suite's base image, November 2026;
``images.build_node_images`` builds them as ``swe-stream/node:<suite>``). What the
repository says narrows them, strongest first:

1. ``engines.node`` (an npm semver range): a candidate none of whose releases satisfies it is
   never tried;
2. the version it pins for development (``.nvmrc``, ``.node-version``): that major first when
   there is an image of it;
3. the versions it declares it is tested on (the CI matrix, setup-node's ``node-version``):
   candidates newer than the newest declared one come after the others;
4. the PR's date: a major released after the PR was merged comes after every one released
   before it.

The result is an order to try, best first, nearest fallbacks next (older before newer).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from streams.evaluation.recipes.interpreter_order import best_first

# The Node major of each Debian suite's ``nodejs`` package (the base images are per suite).
DEBIAN_NODE: dict[str, str] = {"bookworm": "18", "trixie": "20", "forky": "24"}

# first release of each Node.js major (nodejs.org)
RELEASED: dict[str, datetime] = {
    "10": datetime(2018, 4, 24, tzinfo=UTC),
    "12": datetime(2019, 4, 23, tzinfo=UTC),
    "14": datetime(2020, 4, 21, tzinfo=UTC),
    "16": datetime(2021, 4, 20, tzinfo=UTC),
    "18": datetime(2022, 4, 19, tzinfo=UTC),
    "20": datetime(2023, 4, 18, tzinfo=UTC),
    "22": datetime(2024, 4, 24, tzinfo=UTC),
    "24": datetime(2025, 5, 6, tzinfo=UTC),
}

# LTS code names (``lts/hydrogen`` in an .nvmrc) -> major
LTS_NAMES: dict[str, str] = {
    "argon": "4", "boron": "6", "carbon": "8", "dubnium": "10", "erbium": "12",
    "fermium": "14", "gallium": "16", "hydrogen": "18", "iron": "20", "jod": "22",
    "krypton": "24",
}  # fmt: skip

Version = tuple[int, int, int]
_INFINITY: Version = (1 << 30, 0, 0)
_PARTIAL = re.compile(r"^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?(?:[-+].*)?$")
_COMPARATOR = re.compile(r"^(<=|>=|<|>|=|~>|~|\^)?\s*(.*)$")


def node_images_by_suite(images: Iterable[str]) -> dict[str, str]:
    """The Node major of each base image tag naming a Debian suite (``…:bookworm``,
    ``…-trixie``): what ``node_order`` takes as its candidates."""
    out: dict[str, str] = {}
    for tag in images:
        suffix = re.split(r"[:/_-]", tag)[-1]
        major = DEBIAN_NODE.get(suffix)
        if major is not None and major not in out:
            out[major] = tag
    return out


def _partial(text: str) -> tuple[list[int], bool] | None:
    """The numbers of a (partial) version, and whether it is complete (x.y.z); None when it
    is no version."""
    match = _PARTIAL.match(text.strip())
    if match is None:
        return None
    numbers: list[int] = []
    for part in match.groups():
        if part is None or part in {"x", "X", "*"}:
            break
        numbers.append(int(part))
    return numbers, len(numbers) == 3


def _floor(numbers: list[int]) -> Version:
    padded = [*numbers, 0, 0, 0][:3]
    return padded[0], padded[1], padded[2]


def _bump(numbers: list[int]) -> Version:
    """The first version past a partial one: 1.2 -> 1.3.0, 1 -> 2.0.0."""
    if not numbers:
        return _INFINITY
    bumped = [*numbers[:-1], numbers[-1] + 1]
    return _floor(bumped)


def _caret_ceiling(numbers: list[int]) -> Version:
    for index, value in enumerate(numbers):
        if value != 0 or index == len(numbers) - 1:
            return _bump(numbers[: index + 1])
    return _bump(numbers)


Interval = tuple[Version, Version]  # [low, high)


def _comparator(text: str) -> Interval | None:
    """One comparator as the half-open interval of versions it allows; None: unreadable."""
    match = _COMPARATOR.match(text)
    if match is None:
        return None
    operator, rest = match.group(1) or "", match.group(2)
    parsed = _partial(rest) if rest else ([], False)
    if parsed is None:
        return None
    numbers, _ = parsed
    low, high = (0, 0, 0), _INFINITY
    if operator in {"", "="}:
        low, high = _floor(numbers), _bump(numbers) if numbers else _INFINITY
        if len(numbers) == 3:
            high = (numbers[0], numbers[1], numbers[2] + 1)
    elif operator == ">=":
        low = _floor(numbers)
    elif operator == ">":
        low = _bump(numbers) if len(numbers) < 3 else _floor([*numbers[:2], numbers[2] + 1])
    elif operator == "<":
        high = _floor(numbers)
    elif operator == "<=":
        high = _bump(numbers) if len(numbers) < 3 else _floor([*numbers[:2], numbers[2] + 1])
    elif operator in {"~", "~>"}:
        low, high = _floor(numbers), _bump(numbers[:2] if len(numbers) > 1 else numbers)
    elif operator == "^":
        low, high = _floor(numbers), _caret_ceiling(numbers)
    return low, high


def _range_set(text: str) -> list[Interval] | None:
    """One ``||`` alternative (comparators joined by spaces, or ``a - b``) as the list of its
    intervals (their intersection is what it allows)."""
    text = re.sub(r"(<=|>=|<|>|=|~>|~|\^)\s+", r"\1", text.strip())
    hyphen = re.fullmatch(r"(\S+)\s+-\s+(\S+)", text)
    if hyphen:
        low, high = _partial(hyphen.group(1)), _partial(hyphen.group(2))
        if low is None or high is None:
            return None
        top = _bump(high[0]) if not high[1] else _floor([*high[0][:2], high[0][2] + 1])
        return [(_floor(low[0]), top)]
    intervals = []
    for word in text.split():
        interval = _comparator(word)
        if interval is None:
            return None
        intervals.append(interval)
    return intervals


def allowed_by(engines: str | None, major: str) -> bool:
    """Whether some release of Node ``major`` satisfies the npm range ``engines``; an
    unreadable range allows everything (engines are advisory to npm)."""
    if not engines or not engines.strip() or not major.isdigit():
        return True
    window: Interval = ((int(major), 0, 0), (int(major) + 1, 0, 0))
    readable = False
    for alternative in engines.split("||"):
        intervals = _range_set(alternative)
        if intervals is None:
            continue
        readable = True
        low = max([window[0], *(i[0] for i in intervals)])
        high = min([window[1], *(i[1] for i in intervals)])
        if low < high:
            return True
    return not readable


def node_major(text: str | None, merged_at: datetime | None = None) -> str | None:
    """The major a version pin names (``v18.17.0``, ``20``, ``lts/iron``, ``18.x``, ``>=16``:
    its floor), ``lts/*`` the newest LTS released by ``merged_at``; None when it names no
    major (``node``, ``latest``, ``current``)."""
    if text is None:
        return None
    value = text.strip().strip("'\"").lower()
    if value.startswith("lts/"):
        name = value[4:]
        if name in LTS_NAMES:
            return LTS_NAMES[name]
        if name in {"*", "latest"}:
            released = [m for m, d in RELEASED.items() if merged_at is None or d <= merged_at]
            return max(released, key=int) if released else None
        return None
    match = re.match(r"^(?:>=|\^|~|=)?\s*v?(\d+)", value)
    return match.group(1) if match else None


def node_order(
    available: Iterable[str],
    engines: str | None = None,
    declared: Iterable[str] = (),
    pinned: str | None = None,
    merged_at: datetime | None = None,
) -> list[str]:
    """The Node majors to try, best first (see the module's docstring). Empty when
    ``engines`` excludes every one available."""
    candidates = sorted({m for m in available if m.isdigit()}, key=int)
    candidates = [m for m in candidates if allowed_by(engines, m)]
    if not candidates:
        return []
    declared_majors = [int(m) for m in declared if m.isdigit()]
    newest_declared = max(declared_majors) if declared_majors else None
    return best_first(candidates, int, newest_declared, RELEASED, merged_at, pinned)


def declared_majors(versions: Iterable[str], merged_at: datetime | None) -> list[str]:
    """The majors of CI matrix entries (``14.x``, ``16``, ``lts/*``), in order, once each."""
    out: list[str] = []
    for version in versions:
        major = node_major(version, merged_at)
        if major is not None and major not in out:
            out.append(major)
    return out


def image_of(node_images: Mapping[str, str], major: str | None) -> str:
    return node_images.get(major or "", "")
