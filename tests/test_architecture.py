"""The code's shape, checked from its source with ``ast`` (nothing is imported):

- layers: imports only point down (or sideways inside one package), as ``ALLOWED`` says;
- stages: a stage module in ``agents/`` never imports another stage, a helper never a stage,
  and every module of ``agents/`` is one or the other;
- size: no function over ``MAX_FUNCTION_LINES`` lines, no module of ``streams/`` or ``agents/``
  over ``MAX_MODULE_LINES``, and a small CLI root;
- recipes: no module of ``streams/evaluation/recipes/`` imports Docker or the engine
  (``ENGINE_MODULES``): the recipe model and the readers are pure;
- languages: nothing outside ``recipes/languages/<language>/`` names a language's runners or
  its project files (``Language.vocabulary``), and the settings, the overrides and the
  schemas name no language at all (``LANGUAGE_FREE``; the checks that import the registry).

Every import counts: inside functions, under ``if TYPE_CHECKING:``, relative ones.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("streams", "agents", "schemas")

CORE = "streams.core"
SCHEMAS = "schemas"
KAFKA = "streams.kafka"
CLIENTS = "streams.clients"
OFFLINE = "streams.offline"
PIPELINE = "streams.pipeline"
EVALUATION = "streams.evaluation"
AGENTS = "agents"
RUNTIME = "streams.runtime"
CLI = "streams.cli"

# layer package -> the layer packages its modules may import (itself included: sideways)
ALLOWED: dict[str, set[str]] = {
    # L0
    CORE: {CORE},
    SCHEMAS: {SCHEMAS},
    # L1
    KAFKA: {KAFKA, CORE, SCHEMAS},
    CLIENTS: {CLIENTS, CORE, SCHEMAS},
    OFFLINE: {OFFLINE, CORE, SCHEMAS, CLIENTS},
    # L2
    PIPELINE: {PIPELINE, CORE, SCHEMAS, KAFKA},
    EVALUATION: {EVALUATION, CORE, SCHEMAS, CLIENTS},
    # L3
    AGENTS: {AGENTS, CORE, SCHEMAS, KAFKA, CLIENTS, PIPELINE, EVALUATION},
    # L4
    RUNTIME: {RUNTIME, AGENTS, PIPELINE, EVALUATION, KAFKA, CLIENTS, OFFLINE, CORE, SCHEMAS},
    # L5
    CLI: {CLI, RUNTIME, AGENTS, PIPELINE, EVALUATION, KAFKA, CLIENTS, OFFLINE, CORE, SCHEMAS},
}

# the one file of ``streams/`` outside every layer
UNLAYERED = {Path("streams/__init__.py")}

STAGE_MODULES = frozenset(
    {
        "prefilter",
        "enrich",
        "classify",
        "extract",
        "validate",
        "score",
        "export",
        "harness",
        "ingest",
    }
)
HELPER_MODULES = frozenset(
    {
        "paths",
        "prompts",
        "linked_issues",
        "ingest_scan",
        "backends",
        "bots",
        "testgen",
        "setup_agent",
        "tool_loop",
    }
)

MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 800
RECIPES = Path("streams/evaluation/recipes")
# what a recipe module may not import: the Docker SDK and the engine that builds and runs
ENGINE_MODULES = (
    "docker",
    "streams.evaluation.sandbox",
    "streams.evaluation.environments",
    "streams.evaluation.image_builds",
    "streams.evaluation.images",
    "streams.evaluation.egress",
    "streams.evaluation.provisioner",
    "streams.evaluation.prover",
    "streams.evaluation.validator",
)
# the testing kit makes repositories of every language (their files are its data), so it is
# the one place outside a language's folder that writes their file names
# the offline world makes repositories of every language; the Kafka broker is fetched with Maven
# (a tool of its own there, not Java's recipes)
NAMES_ALLOWED_IN = (Path("streams/offline"), Path("streams/kafka/apache_install.py"))
# modules where no language is named at all (its name, its other names, its toolchain): a
# language declares its images, versions, override keys and registries itself, so a plugin
# needs no field of its own in the settings, the overrides or the records
LANGUAGE_FREE = (Path("streams/core/settings.py"), RECIPES / "overrides.py", Path("schemas"))
# how the project's own modules are run, which names the interpreter, not a language mined
PROJECT_COMMAND = re.compile(r"\bpython -m ")
CLI_ROOT = Path("streams/cli/main.py")
MAX_CLI_ROOT_LINES = 150


# -- reading the source ---------------------------------------------------------------------


def relative(path: Path) -> Path:
    """``path`` relative to the repository root (it may already be)."""
    return path.relative_to(ROOT) if path.is_absolute() else path


def module_name(path: Path) -> str:
    """``streams/kafka/client.py`` -> ``streams.kafka.client``; a package is its
    ``__init__.py``."""
    parts = list(relative(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of the repository (a file, not a name in one)."""
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or base.is_dir()


def in_project(name: str) -> bool:
    return name.split(".", 1)[0] in PROJECT_PACKAGES


def imported_modules(path: Path, source: str) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of the project in ``source``, wherever it sits;
    ``from X import Y`` is ``X.Y`` when that is a module, else ``X``; relative imports are
    resolved against ``path``'s package."""
    tree = ast.parse(source, filename=str(path))
    rel = relative(path)
    this = module_name(rel)
    package = this if rel.name == "__init__.py" else this.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if in_project(alias.name):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                anchor = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if not in_project(base):
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield node.lineno, candidate if alias.name != "*" and is_module(candidate) else base


def layer_of(module: str) -> str | None:
    """The layer package ``module`` belongs to (the longest one that contains it), or None."""
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def project_files(*packages: str) -> list[Path]:
    return sorted(
        path
        for package in packages
        for path in (ROOT / package).rglob("*.py")
        if "__pycache__" not in path.parts
    )


# -- the checkers: (path, source) -> violations ---------------------------------------------


def layer_violations(path: Path, source: str) -> list[str]:
    """Every import in ``source`` (the file at ``path``) its layer may not make."""
    rel = relative(path)
    if rel in UNLAYERED:
        return []
    own = layer_of(module_name(rel))
    if own is None:
        return [f"{rel}: belongs to no layer (a module directly in streams/ or outside them)"]
    violations = []
    for line, module in imported_modules(rel, source):
        target = layer_of(module)
        if target not in ALLOWED[own]:
            violations.append(f"{rel}:{line} imports {module} ({own} -> {target or 'no layer'})")
    return violations


def agents_module(module: str) -> str | None:
    """``agents.validate`` (or ``agents.validate.x``) -> ``validate``; None outside agents."""
    parts = module.split(".")
    return parts[1] if parts[0] == AGENTS and len(parts) > 1 else None


def stage_violations(path: Path, source: str) -> list[str]:
    """A stage module importing another stage, or a helper importing a stage."""
    rel = relative(path)
    own = agents_module(module_name(rel))
    if own is None:
        return []
    violations = []
    for line, module in imported_modules(rel, source):
        target = agents_module(module)
        if target is None or target not in STAGE_MODULES or target == own:
            continue
        if own in STAGE_MODULES:
            violations.append(f"{rel}:{line} imports {module} (stage {own} -> stage {target})")
        else:
            violations.append(f"{rel}:{line} imports {module} (helper {own} -> stage {target})")
    return violations


def long_functions(path: Path, source: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """Every function or method (nested ones too) longer than ``limit`` lines, counted from
    its ``def`` line (decorators excluded) to its last line."""
    tree = ast.parse(source, filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            size = node.end_lineno - node.lineno + 1
            if size > limit:
                found.append(f"{relative(path)}:{node.lineno} {node.name}: {size} lines")
    return sorted(found)


def long_module(path: Path, source: str, limit: int = MAX_MODULE_LINES) -> list[str]:
    lines = len(source.splitlines())
    return [f"{relative(path)}: {lines} lines"] if lines > limit else []


def engine_imports(path: Path, source: str) -> list[str]:
    """Every import of Docker or the engine in a module of ``recipes/`` (the Docker SDK is no
    project module: its imports are read here, not by ``imported_modules``)."""
    rel = relative(path)
    if not rel.is_relative_to(RECIPES):
        return []
    sdk = [
        (node.lineno, alias.name if isinstance(node, ast.Import) else node.module or "")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    found = {
        *imported_modules(rel, source),
        *((n, m) for n, m in sdk if m.split(".")[0] == "docker"),
    }
    return [
        f"{rel}:{line} imports {module}"
        for line, module in sorted(found)
        if any(module == m or module.startswith(m + ".") for m in ENGINE_MODULES)
    ]


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _identifier(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    return ""


def named(source: str, words: frozenset[str]) -> list[tuple[int, str]]:
    """Where ``source``'s code names one of ``words``: a string constant holding it as a whole
    word or file name (docstrings aside), or an identifier one of whose ``_`` parts it is.
    Comments are not code: they may say what a branch is for."""
    if not words:
        return []
    alternatives = "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
    pattern = re.compile(rf"(?<![\w.-])({alternatives})(?![\w-])")
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                found += [(node.lineno, m.group(1)) for m in pattern.finditer(node.value)]
        elif name := _identifier(node):
            line = getattr(node, "lineno", 0)
            found += [(line, part) for part in name.lower().split("_") if part in words]
    return sorted(set(found))


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- the rules, on the repository ------------------------------------------------------------


@pytest.mark.unit
def test_every_layer_is_in_the_rules() -> None:
    for layer, allowed in ALLOWED.items():
        assert layer in allowed, f"{layer} may not import itself?"
        assert allowed <= ALLOWED.keys(), f"{layer} names unknown layers"
        assert is_module(layer), f"the layer package {layer} does not exist"


@pytest.mark.unit
def test_no_module_imports_a_higher_layer() -> None:
    violations = [
        violation
        for path in project_files("streams", "agents", "schemas")
        for violation in layer_violations(path, read(path))
    ]
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


@pytest.mark.unit
def test_stage_modules_do_not_import_sibling_stages() -> None:
    assert not STAGE_MODULES & HELPER_MODULES
    names = {
        path.stem if path.is_file() else path.name
        for path in (ROOT / AGENTS).iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py")
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    unclassified = sorted(names - STAGE_MODULES - HELPER_MODULES)
    assert not unclassified, (
        f"agents modules neither a stage nor a helper: {unclassified}; "
        "add each to STAGE_MODULES or HELPER_MODULES in tests/test_architecture.py"
    )
    violations = [
        violation
        for path in project_files(AGENTS)
        for violation in stage_violations(path, read(path))
    ]
    assert not violations, "stage imports:\n" + "\n".join(violations)


@pytest.mark.unit
def test_no_function_is_over_120_lines() -> None:
    offenders = [
        offender
        for path in project_files("streams", "agents")
        for offender in long_functions(path, read(path))
    ]
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(offenders)


@pytest.mark.unit
def test_no_module_is_over_800_lines() -> None:
    offenders = [
        offender
        for path in project_files("streams", "agents")
        for offender in long_module(path, read(path))
    ]
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(offenders)


@pytest.mark.unit
def test_no_recipe_module_imports_docker_or_the_engine() -> None:
    offenders = [
        offender
        for path in project_files("streams")
        for offender in engine_imports(path, read(path))
    ]
    assert not offenders, "recipe modules importing the engine:\n" + "\n".join(offenders)


@pytest.mark.unit
def test_only_a_languages_folder_names_its_runners_and_files() -> None:
    from streams.evaluation.recipes.languages import languages

    offenders = []
    for language in languages():
        folder = Path(sys.modules[type(language).__module__].__file__ or "").parent
        own = relative(folder) if folder.is_relative_to(ROOT) else None
        for path in project_files("streams", "agents"):
            rel = relative(path)
            if (own and rel.is_relative_to(own)) or any(map(rel.is_relative_to, NAMES_ALLOWED_IN)):
                continue
            offenders += [
                f"{rel}:{line} names {word!r} ({language.name}'s)"
                for line, word in named(read(path), language.vocabulary)
            ]
    assert len(languages()) >= 2  # the built-ins were found: the check looked at something
    assert not offenders, "outside their language's folder:\n" + "\n".join(offenders)


def language_names(source: str, words: frozenset[str]) -> list[tuple[int, str]]:
    """Where ``source`` names one of ``words`` (language names, lower case) in any case, but
    in the command that runs one of the project's own modules."""
    return named(PROJECT_COMMAND.sub("", source.lower()), words)


def language_free_files() -> list[Path]:
    return [
        path
        for path in project_files("streams", "agents", "schemas")
        if any(
            relative(path) == free or relative(path).is_relative_to(free) for free in LANGUAGE_FREE
        )
    ]


@pytest.mark.unit
def test_settings_overrides_and_schemas_name_no_language() -> None:
    from streams.evaluation.recipes.languages import languages

    # (a one-letter name, C's, cannot be told from a variable: it is not looked for)
    words = frozenset(
        word.lower()
        for language in languages()
        for word in (language.name, *language.spellings, language.toolchain or "")
        if len(word) > 1
    )
    files = language_free_files()
    assert len(files) >= 5 and {"go", "python"} <= words  # the check looked at something
    offenders = [
        f"{relative(path)}:{line} names {word!r}"
        for path in files
        for line, word in language_names(read(path), words)
    ]
    assert not offenders, "a language named where none may be:\n" + "\n".join(offenders)


@pytest.mark.unit
def test_the_cli_root_is_small() -> None:
    lines = len(read(ROOT / CLI_ROOT).splitlines())
    assert lines < MAX_CLI_ROOT_LINES, (
        f"{CLI_ROOT} has {lines} lines (at most {MAX_CLI_ROOT_LINES - 1}): "
        "move command groups into their own modules of streams/cli/"
    )


# -- the checkers themselves can fail --------------------------------------------------------


@pytest.mark.unit
def test_the_layer_checker_reports_an_upward_import() -> None:
    path = ROOT / "streams" / "evaluation" / "synthetic.py"
    source = "from agents.validate import X\n"
    assert layer_violations(path, source) == [
        "streams/evaluation/synthetic.py:1 imports agents.validate (streams.evaluation -> agents)"
    ]


@pytest.mark.unit
def test_the_layer_checker_sees_every_kind_of_import() -> None:
    path = Path("streams/kafka/synthetic.py")
    source = (
        "from __future__ import annotations\n"
        "import json\n"
        "from typing import TYPE_CHECKING\n"
        "from streams.core import settings\n"  # allowed (L0)
        "from . import topics\n"  # sideways
        "if TYPE_CHECKING:\n"
        "    from streams.pipeline.stage import Stage\n"  # line 7
        "def f():\n"
        "    import agents.enrich\n"  # line 9
        "    from ..evaluation import sandbox\n"  # line 10: relative, resolved to the module
        "    from streams import nosuchlayer\n"  # line 11: no layer
        "    from .. import runtime\n"  # line 12: the package streams.runtime
    )
    assert layer_violations(path, source) == [
        "streams/kafka/synthetic.py:7 imports streams.pipeline.stage "
        "(streams.kafka -> streams.pipeline)",
        "streams/kafka/synthetic.py:9 imports agents.enrich (streams.kafka -> agents)",
        "streams/kafka/synthetic.py:10 imports streams.evaluation.sandbox "
        "(streams.kafka -> streams.evaluation)",
        "streams/kafka/synthetic.py:11 imports streams (streams.kafka -> no layer)",
        "streams/kafka/synthetic.py:12 imports streams.runtime (streams.kafka -> streams.runtime)",
    ]


@pytest.mark.unit
def test_the_layer_checker_reports_a_module_outside_the_layers() -> None:
    assert layer_violations(Path("streams/stray.py"), "import json\n") == [
        "streams/stray.py: belongs to no layer (a module directly in streams/ or outside them)"
    ]
    assert layer_violations(Path("streams/__init__.py"), "import agents\n") == []


@pytest.mark.unit
def test_the_stage_checker_reports_sibling_stages() -> None:
    source = (
        "from agents.enrich import x\n"
        "from agents import paths\n"
        "from . import classify\n"
        "from .validate import y\n"
        "import agents.validate\n"
    )
    assert stage_violations(Path("agents/validate.py"), source) == [
        "agents/validate.py:1 imports agents.enrich (stage validate -> stage enrich)",
        "agents/validate.py:3 imports agents.classify (stage validate -> stage classify)",
    ]
    assert stage_violations(Path("agents/testgen.py"), source) == [
        "agents/testgen.py:1 imports agents.enrich (helper testgen -> stage enrich)",
        "agents/testgen.py:3 imports agents.classify (helper testgen -> stage classify)",
        "agents/testgen.py:4 imports agents.validate (helper testgen -> stage validate)",
        "agents/testgen.py:5 imports agents.validate (helper testgen -> stage validate)",
    ]


@pytest.mark.unit
def test_the_function_checker_counts_from_the_def_line() -> None:
    def lines(count: int, indent: str) -> list[str]:
        return [f"{indent}x = {i}" for i in range(count)]

    fits = ["@decorator", "@another", "def fits():", *lines(MAX_FUNCTION_LINES - 1, "    ")]
    nested = [
        "class K:",
        "    async def method(self):",  # line MAX + 4
        "        def inner():",
        *lines(MAX_FUNCTION_LINES, "            "),  # inner: MAX + 1 lines
    ]
    source = "\n".join([*fits, *nested]) + "\n"
    first = MAX_FUNCTION_LINES + 4
    assert long_functions(Path("agents/synthetic.py"), source) == sorted(
        [
            f"agents/synthetic.py:{first} method: {MAX_FUNCTION_LINES + 2} lines",
            f"agents/synthetic.py:{first + 1} inner: {MAX_FUNCTION_LINES + 1} lines",
        ]
    )


@pytest.mark.unit
def test_the_module_size_checker_counts_lines() -> None:
    path = ROOT / "streams" / "synthetic.py"
    assert long_module(path, "x = 1\n" * 801) == ["streams/synthetic.py: 801 lines"]
    assert long_module(path, "x = 1\n" * 800) == []


@pytest.mark.unit
def test_the_engine_import_checker_reports_docker_in_a_recipe_module() -> None:
    recipe = ROOT / "streams/evaluation/recipes/languages/synthetic/recipe.py"
    source = "import docker\nfrom streams.evaluation.environments import VENV\nimport json\n"
    assert engine_imports(recipe, source) == [
        "streams/evaluation/recipes/languages/synthetic/recipe.py:1 imports docker",
        "streams/evaluation/recipes/languages/synthetic/recipe.py:2 imports "
        "streams.evaluation.environments",
    ]
    assert engine_imports(ROOT / "streams/evaluation/validator.py", source) == []


@pytest.mark.unit
def test_the_language_name_checker_sees_a_field_a_description_and_a_key() -> None:
    source = (
        '"""Settings of Rust, in a docstring."""\n'
        "class Docker:\n"
        "    rust_images: dict[str, str] = {}\n"
        '    base: str = Field("b", description="for Go modules")\n'
        'KEYS = {"java": 1}\n'
        'RUN = "python -m schemas --check"\n'
    )
    words = frozenset({"rust", "go", "java", "python"})
    assert language_names(source, words) == [(3, "rust"), (4, "go"), (5, "java")]


@pytest.mark.unit
def test_the_name_checker_sees_strings_and_identifiers_not_docstrings() -> None:
    source = (
        '"""Runs jest."""\n'
        "# jest in a comment\n"
        'RUNNER = "jest"\n'
        'PATH = "sub/package.json"\n'
        "def jest_output():\n"
        '    """jest"""\n'
        "    return node_tap + jester\n"
        'OTHER = "majestic jest-like"\n'
    )
    words = frozenset({"jest", "package.json", "tap"})
    assert named(source, words) == [(3, "jest"), (4, "package.json"), (5, "jest"), (7, "tap")]
