"""The one file pytest takes its configuration from, by pytest's own precedence: pytest.toml,
pytest.ini, pyproject.toml ``[tool.pytest]`` / ``[tool.pytest.ini_options]``, tox.ini,
setup.cfg.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.recipes.languages.python.common import shell_words
from streams.evaluation.recipes.sources.loaders import load_ini, load_toml, table_at
from streams.evaluation.recipes.sources.tree import SourceTree


@dataclass(frozen=True)
class PytestConfig:
    """The one file pytest takes its configuration from, by pytest's own precedence."""

    path: str
    addopts: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    testpaths: list[str] = field(default_factory=list)
    minversion: str | None = None
    required_plugins: list[str] = field(default_factory=list)


def _ini_value(value: str) -> str:
    return "\n".join(line.strip() for line in value.strip().splitlines() if line.strip())


def _pytest_config(
    tree: SourceTree, path: str, values: Mapping[str, Any], toml: bool
) -> PytestConfig:
    def words(value: Any, split_shell: bool) -> list[str]:
        if isinstance(value, list):
            return [str(item) for item in value]
        if not isinstance(value, str):
            return [str(value)]
        if split_shell or toml:
            return shell_words(value, f"{path} pytest options", tree)
        return value.split()

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return _ini_value(value) if isinstance(value, str) else str(value)

    options: dict[str, str] = {}
    config: dict[str, Any] = {"path": path}
    for key, value in values.items():
        if key == "addopts":
            config["addopts"] = words(value, True)
        elif key in {"testpaths", "required_plugins"}:
            config[key] = words(value, False)
        elif key == "minversion":
            config["minversion"] = text(value)
        else:
            options[key] = text(value)
    return PytestConfig(options=options, **config)


def read_pytest_config(tree: SourceTree, pyproject: dict[str, Any]) -> PytestConfig | None:
    for path in ("pytest.toml", ".pytest.toml"):
        if tree.has(path):
            doc = load_toml(tree, path)
            return (
                _pytest_config(tree, path, table_at(doc, "pytest"), True)
                if doc is not None
                else None
            )
    for path in ("pytest.ini", ".pytest.ini"):
        if tree.has(path):
            parser = load_ini(tree, path)
            if parser is None:
                return None
            values = dict(parser.items("pytest")) if parser.has_section("pytest") else {}
            return _pytest_config(tree, path, values, False)
    tool_pytest = table_at(pyproject, "tool", "pytest")
    native = {k: v for k, v in tool_pytest.items() if k != "ini_options"}
    if native:
        if "ini_options" in tool_pytest:
            tree.problem("pyproject.toml: both [tool.pytest] and [tool.pytest.ini_options]")
        return _pytest_config(tree, "pyproject.toml", native, True)
    if "ini_options" in tool_pytest:
        ini_options = table_at(tool_pytest, "ini_options")
        return _pytest_config(tree, "pyproject.toml", ini_options, False)
    for path, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = load_ini(tree, path) if tree.has(path) else None
        if parser is not None and parser.has_section(section):
            return _pytest_config(tree, path, dict(parser.items(section)), False)
    return None
