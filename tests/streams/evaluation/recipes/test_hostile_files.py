"""Hostile files of the kinds found in the wild, given to every language's readers as a
repository of the test's making (``git archive``, as validation reads a tree): each is a
problem in the facts, never an exception, never a hang, and nothing outside the tree is read."""

from __future__ import annotations

import io
import subprocess
import tarfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from streams.evaluation.recipes.languages import Inputs, languages
from streams.evaluation.recipes.model import TreeFiles
from streams.evaluation.recipes.sources.loaders import XmlRefused, load_xml, parse_xml
from streams.evaluation.recipes.sources.tree import SourceTree

pytestmark = pytest.mark.unit

BILLION_LAUGHS_YAML = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
)
XXE = (
    '<?xml version="1.0"?>\n<!DOCTYPE project [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n'
    "<project><name>&xxe;</name></project>\n"
)
XML_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + str(i - 1 or "") + ";") * 10}">' for i in range(1, 10))
    + "]>\n<lolz>&lol9;</lolz>\n"
)


def git_tree(root: Path, files: Mapping[str, str | bytes], links: Mapping[str, str]) -> TreeFiles:
    """A repository with ``files`` and symbolic ``links`` (path -> target), committed, as
    ``git archive`` gives it."""
    root.mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    for path, target_path in links.items():
        link = root / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target_path)

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
            cwd=root, check=True, capture_output=True,
        ).stdout  # fmt: skip

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "hostile")
    return TreeFiles(git("archive", "--format=tar", "HEAD"))


def all_facts(tree: TreeFiles) -> dict[str, Any]:
    """Every registered language's facts and inferred recipes of ``tree`` (the problems
    included): whatever escapes is the test's failure."""
    found = {}
    for language in languages():
        facts = language.facts(tree)
        recipes, _ = language.infer(tree, Inputs("o/r", images={"python": {"3.11": "img"}}))
        found[language.name.lower()] = (facts, recipes)
    return found


def problems_of(found: dict[str, Any]) -> list[str]:
    return [p for facts, _ in found.values() if facts is not None for p in facts.problems]


def test_a_yaml_billion_laughs_workflow_is_a_problem(tmp_path: Path) -> None:
    tree = git_tree(
        tmp_path / "r",
        {
            "pyproject.toml": '[project]\nname = "x"\n',
            "package.json": '{"name": "x", "scripts": {"test": "node --test"}}',
            ".github/workflows/ci.yml": BILLION_LAUGHS_YAML,
            "pnpm-lock.yaml": BILLION_LAUGHS_YAML,
        },
        {},
    )
    started = time.monotonic()
    problems = problems_of(all_facts(tree))
    assert time.monotonic() - started < 60
    assert any(".github/workflows/ci.yml" in p and "alias bomb" in p for p in problems), problems


def test_a_64_mib_lockfile_is_read_and_a_larger_one_is_a_problem(tmp_path: Path) -> None:
    padding = '"node_modules/p{0}": {{"version": "1.0.{0}"}},'
    body = "".join(padding.format(i) for i in range(1_400_000))
    lock = '{"lockfileVersion": 3, "packages": {' + body
    lock = lock[: (64 << 20) - 10] + '"x": {}}}'
    assert len(lock) <= 64 << 20
    files = {"package.json": '{"name": "x", "scripts": {"test": "node --test"}}'}
    read = all_facts(git_tree(tmp_path / "fits", files | {"package-lock.json": lock}, {}))
    facts, _ = read["javascript"]
    assert facts.lockfile is not None and facts.lockfile.manager == "npm"
    assert facts.lockfile.version == "3"
    larger = lock[:-9] + " " * (1 << 20) + '"x": {}}}'
    facts, _ = all_facts(git_tree(tmp_path / "over", files | {"package-lock.json": larger}, {}))[
        "javascript"
    ]
    assert any("package-lock.json" in p and "larger than" in p for p in facts.problems)


@pytest.mark.parametrize(
    "setup_py",
    [
        "from setuptools import setup\nsetup(name='x', version=" + "(" * 5000 + "1" + ")" * 5000
        + ")\n",
        "from setuptools import setup\nV = " + " + ".join(["'1'"] * 200_000) + "\nsetup(name='x'"
        ", version=V)\n",
        "from setuptools import setup\nsetup(name='x', install_requires=" + "[" * 150 + "'a'"
        + "]" * 150 + ")\n",
    ],
    ids=["nested-parentheses", "long-sum", "nested-lists"],
)  # fmt: skip
def test_a_setup_py_of_deeply_nested_expressions_is_a_problem(
    tmp_path: Path, setup_py: str
) -> None:
    tree = git_tree(
        tmp_path / "r", {"setup.py": setup_py, "tests/test_a.py": "def test(): 0\n"}, {}
    )
    facts, recipes = all_facts(tree)["python"]
    assert facts is not None and recipes  # the tree still gets its recipes
    assert any("setup.py" in p for p in facts.problems), facts.problems


def test_xml_with_an_external_entity_or_entity_expansion_is_refused(tmp_path: Path) -> None:
    for text in (XXE, XML_LAUGHS):
        with pytest.raises(XmlRefused, match="DOCTYPE"):
            parse_xml(text)
    files = {"pom.xml": XXE.encode(), "laughs.xml": XML_LAUGHS.encode()}
    tree = SourceTree(list(files), files.get)
    assert load_xml(tree, "pom.xml") is None and load_xml(tree, "laughs.xml") is None
    assert len(tree.problems) == 2 and all("DOCTYPE" in p for p in tree.problems)
    assert "root:" not in repr(tree.parsed)  # /etc/passwd was never read
    assert parse_xml("<project><name>x</name></project>").find("name").text == "x"  # type: ignore[union-attr]


def test_a_symlink_out_of_the_tree_is_never_read_and_one_in_it_is(tmp_path: Path) -> None:
    secret = tmp_path / "host-file"
    secret.write_text('[project]\nname = "host-secret-7f3a"\ndependencies = ["leak-7f3a"]\n')
    tree = git_tree(
        tmp_path / "r",
        {
            "config/setup.cfg": "[metadata]\nname = inside\n[options]\ninstall_requires =\n"
            "    six\n",
            "package-secret/readme": "x",
            "tests/test_a.py": "def test(): 0\n",
        },
        {
            "pyproject.toml": str(secret),  # absolute: a file of the host
            "package.json": "../../../../etc/hostname",  # relative, up past the root
            "setup.cfg": "config/setup.cfg",  # stays in the tree: read
        },
    )
    assert tree.escaping == {
        "pyproject.toml": str(secret),
        "package.json": "../../../../etc/hostname",
    }
    assert tree.read("pyproject.toml") is None and tree.read("package.json") is None
    found = all_facts(tree)
    facts, _ = found["python"]
    assert "pyproject.toml: a symbolic link out of the repository; not read" in facts.problems
    assert facts.project_name == "inside" and "six" in facts.dependencies  # through its link
    assert "7f3a" not in repr(found) and "host-secret" not in repr(found)


def test_a_tar_link_chain_and_loop_end_in_the_tree_or_nowhere() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = b"[metadata]\nname = chained\n"
        member = tarfile.TarInfo("real.cfg")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
        for name, target in (("a", "b"), ("b", "real.cfg"), ("loop1", "loop2"),
                             ("loop2", "loop1"), ("sub/out", "../../x")):  # fmt: skip
            link = tarfile.TarInfo(name)
            link.type, link.linkname = tarfile.SYMTYPE, target
            tar.addfile(link)
    tree = TreeFiles(buffer.getvalue())
    assert tree.read("a") == data
    assert tree.escaping == {"sub/out": "../../x"}
    assert not tree.has("loop1") and tree.read("loop1") is None


def test_links_climbing_out_reach_docker_as_the_absolute_path_they_resolve_to(
    tmp_path: Path,
) -> None:
    """Docker refuses to extract a relative link that climbs out of the directory: the tar for
    the instance image points it at the same place by an absolute path (a long one too)."""
    long_target = "../" * 8 + "tmp/" + "d" * 120 + "/pyproject.toml"
    tree = git_tree(
        tmp_path / "r",
        {"a.txt": "a\n"},
        {"setup.cfg": long_target, "sub/x": "../../etc/hostname", "abs": "/etc/passwd",
         "in": "a.txt"},
    )  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(tree.container_tar())) as tar:
        links = {m.name: m.linkname for m in tar.getmembers() if m.issym()}
    assert links == {
        "setup.cfg": "/tmp/" + "d" * 120 + "/pyproject.toml",
        "sub/x": "/etc/hostname",
        "abs": "/etc/passwd",
        "in": "a.txt",
    }
    plain = git_tree(tmp_path / "plain", {"a.txt": "a\n"}, {"in": "a.txt"})
    assert plain.container_tar() is plain.tar_bytes  # nothing to rewrite: the archive as it is


def test_a_setup_py_with_odd_escapes_warns_nothing_in_this_process(tmp_path: Path) -> None:
    """Python warns of an invalid escape when it parses one: a repository's file is no cause
    for this process's warnings (a worker's log would fill with them)."""
    tree = git_tree(
        tmp_path / "r",
        {"setup.py": "from setuptools import setup\nsetup(name='x', version='\\e1')\n"},
        {},
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts, _ = all_facts(tree)["python"]
    assert [str(w.message) for w in caught] == []
    assert facts is not None
