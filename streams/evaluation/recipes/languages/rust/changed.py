"""The tests a Rust test patch adds or changes: ``<package>::<target>::<module path>::<fn>``
of each test function a line the patch adds falls in (its attributes through its closing
brace).

A test patch that does not compile without the fix takes its whole test target out of the
run with the test patch alone (cargo builds a target or none of it); three runs then tell an
old test of the target (it passed at the base: PASS_TO_PASS) from one the patch changed (its
new body never ran before the fix). Rust's tests are items anywhere in a file (a
``#[cfg(test)] mod tests`` at the end of ``src/parser.rs``, nested modules), not found from a
hunk's header as Go's are: each changed ``.rs`` file's new text is made (the base's with the
hunks applied, or the added lines of an added file) and lexed (``inline.test_functions``).

A line the patch only removes names no test: a removed test is no test after the fix, and a
body that only lost lines asked no more of the code than before (its old self passed at the
base). Blank added lines change nothing either.

Where a file's tests run, as cargo lays targets out by convention:

- ``tests/<name>.rs`` and ``tests/<name>/main.rs``: the integration test ``<name>``, whose
  other files ``tests/<name>/a/b.rs`` are its modules ``a::b`` (a directory of ``tests/``
  without a ``main.rs``, ``tests/common/mod.rs``, is a helper other targets include);
- ``src/``: the library ``lib`` (``src/a/b.rs``: module ``a::b``, ``src/a/mod.rs``: ``a``);
  ``src/main.rs``: the binary named after the package, ``src/bin/<n>.rs`` (or
  ``src/bin/<n>/main.rs``) the binary ``<n>``; in a package with no library, the other files
  of ``src/`` are ``main.rs``'s modules;
- anything else (``benches/``, ``examples/``, ``build.rs``, a target a manifest moves):
  nothing.

Nothing raises on a malformed patch: what could be read is returned.
"""

from __future__ import annotations

from streams.evaluation.recipes.languages.rust.cargo import (
    CargoFacts,
    CargoPackage,
    cargo_facts_of,
    package_of,
)
from streams.evaluation.recipes.languages.rust.inline import test_functions
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import file_patches, new_side, touched_by

__all__ = ["changed_tests"]

# a base file larger than this is taken as empty (its hunks alone are read): generated
# tables, not hand-written tests
_MAX_SOURCE = 8 << 20


def changed_tests(tree: TreeFiles, test_patch: str) -> list[str]:
    """The ids of the test functions ``test_patch`` adds or changes in the ``.rs`` files of
    ``tree``'s packages (``tree``: the base the patch applies to), sorted."""
    patches = {p.new: p for p in file_patches(test_patch) if p.new and p.new.endswith(".rs")}
    if not patches:
        return []  # no manifest read for a patch without Rust
    facts = cargo_facts_of(tree)
    if facts is None:
        return []
    touched = set(patches)
    found: set[str] = set()
    for path, patch in patches.items():
        where = _target(tree, facts, path, touched)
        if where is None:
            continue
        prefix, modules = where
        text, added = new_side(tree, patch, _MAX_SOURCE)
        for test in touched_by(test_functions(text), added, lambda t: (t.start, t.end)):
            found.add("::".join((prefix, *modules, *test.modules, test.name)))
    return sorted(found)


# -- where a file's tests run ------------------------------------------------------------------


def _target(
    tree: TreeFiles, facts: CargoFacts, path: str, touched: set[str]
) -> tuple[str, tuple[str, ...]] | None:
    """(``<package>::<target>``, the module path of the file in its target) of a file; None
    when no test target of a package holds it."""
    package = package_of(facts, path)
    if package is None:
        return None
    relative = path if package.directory == "." else path[len(package.directory) + 1 :]
    parts = relative.split("/")
    if parts[0] == "tests" and len(parts) == 2:
        return f"{package.name}::{parts[1].removesuffix('.rs')}", ()
    if parts[0] == "tests" and len(parts) > 2:
        if not _exists(tree, package, f"tests/{parts[1]}/main.rs", touched):
            return None  # a helper directory (tests/common/mod.rs), no target of its own
        return f"{package.name}::{parts[1]}", _modules(parts[2:])
    if parts[0] != "src" or len(parts) < 2:
        return None
    if parts[1] == "bin" and len(parts) > 2:
        name = parts[2].removesuffix(".rs")
        return f"{package.name}::bin/{name}", _modules(parts[3:])
    if parts[1:] == ["main.rs"]:
        return f"{package.name}::bin/{package.name}", ()
    if package.lib_name is not None or parts[1:] == ["lib.rs"]:
        return f"{package.name}::lib", _modules(parts[1:])
    if _exists(tree, package, "src/main.rs", touched):
        return f"{package.name}::bin/{package.name}", _modules(parts[1:])
    return None


def _exists(tree: TreeFiles, package: CargoPackage, relative: str, touched: set[str]) -> bool:
    """Whether the package's file ``relative`` is in the tree or the patch makes it."""
    path = relative if package.directory == "." else f"{package.directory}/{relative}"
    return tree.has(path) or path in touched


def _modules(parts: list[str]) -> tuple[str, ...]:
    """The module path of a file below its target's root: ``a/b.rs`` -> ``a::b``,
    ``a/mod.rs`` -> ``a``, ``main.rs`` or ``lib.rs`` (the root itself) -> nothing."""
    if not parts:
        return ()
    names = [*parts[:-1], parts[-1].removesuffix(".rs")]
    if names[-1] == "mod" or (len(names) == 1 and names[0] in ("main", "lib")):
        names.pop()
    return tuple(names)
