"""The loaders of a tree's structured files, each with its own parser: TOML (``tomllib``), INI
(``configparser``, interpolation off), YAML (the safe loader behind the alias and depth guard of
``streams.core.settings.safe_load_yaml``), JSON and XML (``defusedxml``: no DTD, hence no entity
to expand and nothing external to fetch). Every file goes through the tree's size cap and never
through a symbolic link out of the tree (``SourceTree``); a file that does not parse is ``None``
and a problem, never an exception. Parsed documents are cached on the tree, so a file two
readers look at is parsed once: callers must not change them.
"""

from __future__ import annotations

import configparser
import json
import tomllib
import xml.etree.ElementTree as ElementTree
from typing import Any

import yaml
from defusedxml import DefusedXmlException
from defusedxml import ElementTree as defused

from streams.core.settings import safe_load_yaml
from streams.evaluation.recipes.sources.tree import SourceTree


def short_error(exc: BaseException) -> str:
    """The first line of an error message, for a problem (a parser's message can be long)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return first[:160]


def _cached(tree: SourceTree, kind: str, path: str) -> tuple[bool, Any]:
    key = (kind, path)
    return (key in tree.parsed), tree.parsed.get(key)


def load_toml(tree: SourceTree, path: str) -> dict[str, Any] | None:
    found, cached = _cached(tree, "toml", path)
    if found:
        return cached if isinstance(cached, dict) else None
    text = tree.text(path)
    doc: dict[str, Any] | None = None
    if text is not None:
        try:
            doc = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError, MemoryError, ValueError) as exc:
            tree.problem(f"{path}: not valid TOML ({short_error(exc)})")
    tree.parsed[("toml", path)] = doc
    return doc


class Ini(configparser.RawConfigParser):
    """configparser without interpolation (``%`` is literal in tox and setup.cfg), keys kept as
    written, duplicate sections and keys tolerated (the last wins, as tox reads them)."""

    def __init__(self) -> None:
        super().__init__(
            strict=False,
            default_section="\x00default",
            comment_prefixes=("#", ";"),
            inline_comment_prefixes=None,
        )

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def parse_ini(text: str, where: str, tree: SourceTree) -> Ini | None:
    parser = Ini()
    try:
        parser.read_string(text, source=where)
    except (configparser.Error, RecursionError, MemoryError, ValueError) as exc:
        tree.problem(f"{where}: not valid INI ({short_error(exc)})")
        return None
    return parser


def load_ini(tree: SourceTree, path: str) -> Ini | None:
    found, cached = _cached(tree, "ini", path)
    if found:
        return cached if isinstance(cached, Ini) else None
    text = tree.text(path)
    parser = parse_ini(text, path, tree) if text is not None else None
    tree.parsed[("ini", path)] = parser
    return parser


def parse_yaml(text: str, where: str, tree: SourceTree) -> Any:
    try:
        return safe_load_yaml(text)
    except (yaml.YAMLError, RecursionError, MemoryError, ValueError) as exc:
        tree.problem(f"{where}: not valid YAML ({short_error(exc)})")
        return None


def load_yaml(tree: SourceTree, path: str) -> Any:
    found, cached = _cached(tree, "yaml", path)
    if found:
        return cached
    text = tree.text(path)
    doc = parse_yaml(text, path, tree) if text is not None else None
    tree.parsed[("yaml", path)] = doc
    return doc


def load_json(tree: SourceTree, path: str) -> Any:
    found, cached = _cached(tree, "json", path)
    if found:
        return cached
    text = tree.text(path)
    doc: Any = None
    if text is not None:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError, MemoryError) as exc:
            tree.problem(f"{path}: not valid JSON ({short_error(exc)})")
    tree.parsed[("json", path)] = doc
    return doc


class XmlRefused(ValueError):
    """The XML declares a DOCTYPE or an entity: refused, never expanded or fetched."""


def parse_xml(text: str | bytes) -> ElementTree.Element:
    """An XML document's root element; ``XmlRefused`` when it declares a DOCTYPE or an entity
    (so no entity, internal or external, is ever expanded or fetched), ValueError when it is
    malformed."""
    try:
        return defused.fromstring(text, forbid_dtd=True, forbid_entities=True)
    except DefusedXmlException:
        raise XmlRefused(
            "a DOCTYPE or an ENTITY declaration is refused (entities are never expanded)"
        ) from None
    except ElementTree.ParseError as exc:
        raise ValueError(f"malformed XML: {short_error(exc)}") from None
    except (RecursionError, MemoryError) as exc:
        raise ValueError(f"XML nested too deeply or too large ({type(exc).__name__})") from None


def load_xml(tree: SourceTree, path: str) -> ElementTree.Element | None:
    found, cached = _cached(tree, "xml", path)
    if found:
        return cached if isinstance(cached, ElementTree.Element) else None
    text = tree.text(path)
    doc: ElementTree.Element | None = None
    if text is not None:
        try:
            doc = parse_xml(text)
        except ValueError as exc:
            tree.problem(f"{path}: not read as XML ({exc})")
    tree.parsed[("xml", path)] = doc
    return doc


# -- values of loaded documents ------------------------------------------------------------------


def table_at(doc: Any, *keys: str) -> dict[str, Any]:
    """The mapping at ``doc[key1][key2]...``; {} where a key is missing or not a mapping."""
    value = doc
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def list_value(value: Any) -> list[Any]:
    """A list value, or [] for anything else."""
    return value if isinstance(value, list) else []


def string_list(value: Any) -> list[str]:
    """A list of strings from a TOML/YAML value: a string, or the strings of a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []
