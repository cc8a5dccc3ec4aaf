"""A Maven tree's facts, read from its POMs with the XML parser: the reactor's modules (the
root POM's ``<modules>`` and those of profiles active by default, followed down), each
module's Java level (``maven.compiler.release`` / ``source`` / ``target`` / ``testRelease``,
``java.version`` and the like, the compiler plugin's own configuration, ``${property}``
references resolved through the POMs of the tree a module inherits from), the JDK versions a
toolchains plugin asks for, and the Maven configuration of ``.mvn/``.

A parent POM outside the tree (an organisation's shared parent) is not read: a level it
alone sets is unknown here, and the JDK is then chosen from the CI's ``setup-java``.
"""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.patched import FactsAfterDiffs
from streams.evaluation.recipes.sources.loaders import parse_xml

POM = "pom.xml"
MAVEN_CONFIG_DIR = ".mvn"
MAX_POM = 2 << 20
MAX_MODULES = 400
# the properties builds name their Java level with (besides the compiler plugin's own)
LEVEL_PROPERTIES = (
    "maven.compiler.release",
    "maven.compiler.source",
    "maven.compiler.target",
    "maven.compiler.testRelease",
    "maven.compiler.testSource",
    "maven.compiler.testTarget",
    "java.version",
    "java.release",
    "jdk.version",
    "javaVersion",
    "java.target",
    "project.build.targetJdk",  # basepom's
)
LEVEL_SETTINGS = ("release", "source", "target", "testRelease", "testSource", "testTarget")
_REFERENCE = re.compile(r"\$\{([^}]+)\}")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass
class PomModule:
    """One POM of the reactor."""

    directory: str  # "." for the root
    artifact_id: str = ""
    group_id: str = ""  # its own, else its parent's
    parent: tuple[str, str, str] | None = None  # the parent's group, artifact and version
    packaging: str = "jar"
    modules: list[str] = field(default_factory=list)  # child directories, from the root
    properties: dict[str, str] = field(default_factory=dict)
    parent_directory: str | None = None  # the parent POM's directory, where it is in the tree
    levels: dict[str, str] = field(default_factory=dict)  # where -> the level as written
    toolchain_jdk: str | None = None  # the toolchains plugin's <jdk><version>, as written


@dataclass
class MavenFacts:
    """What a Maven tree's files say."""

    modules: dict[str, PomModule] = field(default_factory=dict)  # directory -> its POM
    poms: dict[str, bytes] = field(default_factory=dict)  # path -> bytes (every reactor POM)
    config: dict[str, bytes] = field(default_factory=dict)  # .mvn/ files Maven reads
    problems: list[str] = field(default_factory=list)

    def java_levels(self) -> dict[str, int]:
        """Every Java level the reactor's POMs name, resolved (``1.8`` -> 8), by where."""
        found: dict[str, int] = {}
        for module in self.modules.values():
            for where, written in module.levels.items():
                level = java_level(resolve(written, self.properties_of(module.directory)))
                if level is not None:
                    found[f"{module.directory}/pom.xml {where}"] = level
        return found

    def toolchain_jdks(self) -> dict[str, int]:
        """The lowest JDK each toolchains plugin configuration accepts, by POM."""
        found = {}
        for module in self.modules.values():
            if module.toolchain_jdk:
                written = resolve(module.toolchain_jdk, self.properties_of(module.directory))
                level = lowest_of_range(written)
                if level is not None:
                    found[f"{module.directory}/pom.xml"] = level
        return found

    def parents_outside(self) -> list[str]:
        """``group:artifact:version`` of each parent the reactor does not build (an
        organisation's shared POM)."""
        own = {(m.group_id, m.artifact_id) for m in self.modules.values()}
        found: list[str] = []
        for module in self.modules.values():
            if module.parent is None or module.parent[:2] in own:
                continue
            group, artifact, written = module.parent
            version = resolve(written, self.properties_of(module.directory))
            coordinates = f"{group}:{artifact}:{version}"
            if coordinates not in found:
                found.append(coordinates)
        return found

    def properties_of(self, directory: str) -> dict[str, str]:
        """The properties a module sees: its ancestors' in the tree, overridden by its own."""
        chain: list[PomModule] = []
        seen: set[str] = set()
        at: str | None = directory
        while at is not None and at in self.modules and at not in seen:
            seen.add(at)
            chain.append(self.modules[at])
            at = self.modules[at].parent_directory
        merged: dict[str, str] = {}
        for module in reversed(chain):
            merged.update(module.properties)
        return merged

    def module_of(self, path: str) -> str | None:
        """The directory of the reactor module holding ``path`` (the nearest POM above it)."""
        directory = posixpath.dirname(path) or "."
        while True:
            if directory in self.modules:
                return directory
            if directory == ".":
                return None
            directory = posixpath.dirname(directory) or "."


def is_maven_tree(tree: TreeFiles) -> bool:
    return tree.has(POM)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(element: ElementTree.Element | None, name: str) -> ElementTree.Element | None:
    if element is None:
        return None
    return next((c for c in element if _local(c.tag) == name), None)


def _children(element: ElementTree.Element | None, name: str) -> list[ElementTree.Element]:
    if element is None:
        return []
    return [c for c in element if _local(c.tag) == name]


def _text(element: ElementTree.Element | None) -> str:
    return (element.text or "").strip() if element is not None else ""


def resolve(value: str, properties: dict[str, str], depth: int = 5) -> str:
    """``value`` with its ``${name}`` references replaced from ``properties`` (unknown ones
    kept as written)."""
    for _ in range(depth):
        replaced = _REFERENCE.sub(lambda m: properties.get(m.group(1), m.group(0)), value)
        if replaced == value:
            break
        value = replaced
    return value


def java_level(value: str) -> int | None:
    """A Java level as a major (``1.8`` -> 8, ``17`` -> 17); None when it is no number (an
    unresolved property)."""
    found = _NUMBER.fullmatch(value.strip())
    if found is None:
        return None
    major, _, minor = found.group(0).partition(".")
    if major == "1" and minor:
        return int(minor)
    return int(major)


def lowest_of_range(value: str) -> int | None:
    """The lowest major a version or version range accepts (``[17,24)`` -> 17, ``11`` -> 11)."""
    text = value.strip().lstrip("[(").split(",", 1)[0].strip()
    if not text:
        return None
    return java_level(
        ".".join(text.split(".")[:2]) if text.startswith("1.") else text.split(".")[0]
    )


def _plugin_settings(project: ElementTree.Element) -> tuple[dict[str, str], str | None]:
    """The compiler plugin's level settings and the toolchains plugin's JDK version, from
    ``build/plugins`` and ``build/pluginManagement/plugins``."""
    levels: dict[str, str] = {}
    toolchain: str | None = None
    build = _child(project, "build")
    lists = [_child(build, "plugins"), _child(_child(build, "pluginManagement"), "plugins")]
    for plugins in lists:
        for plugin in _children(plugins, "plugin"):
            artifact = _text(_child(plugin, "artifactId"))
            configuration = _child(plugin, "configuration")
            configurations = [configuration] + [
                _child(e, "configuration")
                for e in _children(_child(plugin, "executions"), "execution")
            ]
            for config in configurations:
                if config is None:
                    continue
                if artifact == "maven-compiler-plugin":
                    for name in LEVEL_SETTINGS:
                        written = _text(_child(config, name))
                        if written:
                            levels.setdefault(f"compiler {name}", written)
                elif artifact == "maven-toolchains-plugin":
                    jdk = _child(_child(config, "toolchains"), "jdk")
                    toolchain = toolchain or _text(_child(jdk, "version")) or None
    return levels, toolchain


def read_pom(text: bytes, directory: str) -> PomModule:
    """One POM's module (``ValueError`` when it is no well-formed POM)."""
    project = parse_xml(text)
    if _local(project.tag) != "project":
        raise ValueError(f"root element <{_local(project.tag)}>, not <project>")
    module = PomModule(directory)
    module.artifact_id = _text(_child(project, "artifactId"))
    module.packaging = _text(_child(project, "packaging")) or "jar"
    module.group_id = _text(_child(project, "groupId")) or _text(
        _child(_child(project, "parent"), "groupId")
    )
    for prop in list(_child(project, "properties") or []):
        module.properties[_local(prop.tag)] = (prop.text or "").strip()
    declared = [_text(m) for m in _children(_child(project, "modules"), "module")]
    for profile in _children(_child(project, "profiles"), "profile"):
        active = _text(_child(_child(profile, "activation"), "activeByDefault"))
        if active == "true":
            declared += [_text(m) for m in _children(_child(profile, "modules"), "module")]
    for name in declared:
        if name:
            path = posixpath.normpath(posixpath.join(directory, name.removesuffix("/pom.xml")))
            if path not in module.modules:
                module.modules.append(path)
    parent = _child(project, "parent")
    if parent is not None:
        module.parent = (
            _text(_child(parent, "groupId")),
            _text(_child(parent, "artifactId")),
            _text(_child(parent, "version")),
        )
        relative = _text(_child(parent, "relativePath"))
        relative = "../pom.xml" if _child(parent, "relativePath") is None else relative
        if relative:
            target = posixpath.normpath(posixpath.join(directory, relative))
            module.parent_directory = (
                (posixpath.dirname(target) or ".") if target.endswith(".xml") else target
            )
    for name in LEVEL_PROPERTIES:
        if name in module.properties:
            module.levels[f"property {name}"] = module.properties[name]
    levels, module.toolchain_jdk = _plugin_settings(project)
    module.levels.update(levels)
    return module


def _in(directory: str, name: str) -> str:
    return name if directory == "." else f"{directory}/{name}"


def read_maven_facts(tree: TreeFiles) -> MavenFacts | None:
    """The reactor of ``tree`` from its root POM down; None when it has no root POM."""
    if not is_maven_tree(tree):
        return None
    facts = MavenFacts()
    pending = ["."]
    while pending and len(facts.modules) < MAX_MODULES:
        directory = pending.pop(0)
        if directory in facts.modules or directory.startswith(".."):
            continue
        path = _in(directory, POM)
        data = tree.read(path, MAX_POM)
        if data is None:
            facts.problems.append(f"{path}: {tree.why_unreadable(path) or 'not in the tree'}")
            continue
        try:
            module = read_pom(data, directory)
        except ValueError as exc:
            facts.problems.append(f"{path}: {exc}")
            continue
        facts.modules[directory] = module
        facts.poms[path] = data
        pending += module.modules
    for module in list(facts.modules.values()):
        if module.parent_directory is not None and module.parent_directory not in facts.modules:
            parent_pom = _in(module.parent_directory, POM)
            data = tree.read(parent_pom, MAX_POM)  # an aggregator-less parent in the tree
            if data is not None and parent_pom not in facts.poms:
                try:
                    facts.modules[module.parent_directory] = read_pom(data, module.parent_directory)
                    facts.poms[parent_pom] = data
                except ValueError as exc:
                    facts.problems.append(f"{parent_pom}: {exc}")
    for name in tree.names:
        if name.startswith(f"{MAVEN_CONFIG_DIR}/") and name.rsplit("/", 1)[-1] in (
            "extensions.xml",
            "maven.config",
            "jvm.config",
        ):
            data = tree.read(name, MAX_POM)
            if data is not None:
                facts.config[name] = data
    return facts


def _maven_file(path: str) -> bool:
    return posixpath.basename(path) == POM or path.startswith(f"{MAVEN_CONFIG_DIR}/")


# The reactor of the tree a PR's diffs leave, when they change a POM (a dependency or a module
# its tests need); None when they change none.
pull_request_maven_facts = FactsAfterDiffs(
    read_maven_facts, _maven_file, lambda path: posixpath.basename(path) == POM
)
