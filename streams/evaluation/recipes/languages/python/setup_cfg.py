"""setup.cfg's metadata and options (``configparser``, interpolation off), with setuptools' list
syntax and its ``file:`` references.
"""

from __future__ import annotations

import posixpath

from streams.evaluation.recipes.languages.python.common import Metadata, nonblank_lines
from streams.evaluation.recipes.languages.python.requirements import (
    checked_requirements,
    requirements_from_files,
)
from streams.evaluation.recipes.sources.loaders import load_ini
from streams.evaluation.recipes.sources.tree import SourceTree


def cfg_list(value: str, separator: str) -> list[str]:
    """setuptools' list syntax: one item per line, or ``separator``-separated on one line."""
    value = value.strip()
    items = value.splitlines() if "\n" in value else value.split(separator)
    return [item.strip() for item in items if item.strip() and not item.strip().startswith("#")]


def _cfg_values(tree: SourceTree, acc: Metadata, value: str, separator: str) -> list[str]:
    if value.strip().startswith("file:"):
        files = [f for f in value.strip()[5:].split(",") if f.strip()]
        if separator == ";":
            return requirements_from_files(tree, files, acc.extra_requirement_refs)
        found = []
        for path in files:
            text = tree.text(posixpath.normpath(path.strip()))
            found.extend(nonblank_lines(text or ""))
        return found
    return cfg_list(value, separator)


def read_setup_cfg(tree: SourceTree, acc: Metadata) -> None:
    parser = load_ini(tree, "setup.cfg")
    if parser is None:
        return
    where = "setup.cfg"
    if parser.has_option("metadata", "name") and acc.project_name is None:
        acc.project_name = parser.get("metadata", "name").strip()
    for key in ("classifiers", "classifier"):
        if parser.has_option("metadata", key):
            acc.add_classifiers(_cfg_values(tree, acc, parser.get("metadata", key), ","))
    options = dict(parser.items("options")) if parser.has_section("options") else {}
    if "python_requires" in options and acc.requires_python is None:
        acc.requires_python = options["python_requires"].strip()
    if "install_requires" in options:
        values = _cfg_values(tree, acc, options["install_requires"], ";")
        acc.set_dependencies(checked_requirements(values, f"{where} install_requires", tree))
    for key, target in (
        ("setup_requires", acc.setup_requires),
        ("tests_require", acc.tests_require),
    ):
        if key in options:
            values = _cfg_values(tree, acc, options[key], ";")
            target.extend(checked_requirements(values, f"{where} {key}", tree))
    if parser.has_section("options.extras_require"):
        extras = {
            name: checked_requirements(
                _cfg_values(tree, acc, value, ";"), f"{where} [{name}]", tree
            )
            for name, value in parser.items("options.extras_require")
        }
        acc.add_extras(extras)
    if parser.has_section("versioneer"):
        acc.scm_version = True
