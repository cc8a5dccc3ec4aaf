"""What an Autotools project says a recipe needs, read from its ``configure.ac`` as m4 reads
macro calls (a name, then its arguments in parentheses, split at top-level commas, ``[...]``
quoting removed one level; ``dnl`` and ``#`` comments dropped): its name (``AC_INIT``), the
pkg-config modules (``PKG_CHECK_MODULES``) and the libraries (``AC_CHECK_LIB``,
``AC_SEARCH_LIBS``) it finds, and whether it has Automake tests (``TESTS`` in a
``Makefile.am``: run by ``make check``'s parallel harness, one ``.trs`` per test)."""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.evaluation.recipes.model import TreeFiles

CONFIGURE_FILES = ("configure.ac", "configure.in")
MAX_BYTES = 2 << 20


@dataclass
class AutotoolsFacts:
    project: str | None = None
    configure: str = CONFIGURE_FILES[0]
    has_configure_script: bool = False  # a generated ./configure in the tree
    modules: list[str] = field(default_factory=list)  # pkg-config modules, as written
    libraries: list[str] = field(default_factory=list)  # -l names
    automake_tests: bool = False
    cxx: bool = False  # AC_PROG_CXX: it compiles C++ (else its tasks say C)


def macro_calls(text: str) -> list[tuple[str, list[str]]]:
    """(name, arguments) of each macro call at the top level of an m4 file."""
    found: list[tuple[str, list[str]]] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == "#" or (text.startswith("dnl", index) and _word_ends(text, index + 3)):
            end = text.find("\n", index)
            index = length if end < 0 else end + 1
        elif char.isalpha() or char == "_":
            start = index
            while index < length and (text[index].isalnum() or text[index] == "_"):
                index += 1
            if index < length and text[index] == "(":
                arguments, index = _arguments(text, index + 1)
                found.append((text[start:index].split("(", 1)[0], arguments))
        else:
            index += 1
    return found


def nested_calls(text: str, depth: int = 8) -> list[tuple[str, list[str]]]:
    """Every macro call, those in another's arguments too (``AS_IF([...], [AC_CHECK_LIB(...)])``,
    a library checked only when an option asks for it), outer ones first."""
    found: list[tuple[str, list[str]]] = []
    for name, arguments in macro_calls(text):
        found.append((name, arguments))
        if depth > 0:
            for argument in arguments:
                found += nested_calls(argument, depth - 1)
    return found


def _word_ends(text: str, index: int) -> bool:
    return index >= len(text) or not (text[index].isalnum() or text[index] == "_")


def _arguments(text: str, index: int) -> tuple[list[str], int]:
    """The arguments of a call whose ``(`` ends before ``index``, and where it closes."""
    arguments: list[str] = []
    current: list[str] = []
    quotes = parens = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char == "[":
            quotes += 1
            if quotes == 1:
                continue
        elif char == "]" and quotes:
            quotes -= 1
            if quotes == 0:
                continue
        elif quotes == 0 and char == "(":
            parens += 1
        elif quotes == 0 and char == ")":
            if parens == 0:
                arguments.append("".join(current).strip())
                return arguments, index
            parens -= 1
        elif quotes == 0 and parens == 0 and char == ",":
            arguments.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    arguments.append("".join(current).strip())
    return arguments, index


def pkg_config_modules(written: str) -> list[str]:
    """The modules of a ``PKG_CHECK_MODULES`` list (``glib-2.0 >= 2.50 zlib``)."""
    words = written.split()
    modules = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in (">=", "<=", "=", ">", "<", "!="):
            skip = True  # the version after it
            continue
        if "$" not in word:
            modules.append(word)
    return modules


def read_autotools(tree: TreeFiles) -> AutotoolsFacts | None:
    """The facts of the tree's Autotools project; None without a root ``configure.ac`` (or
    ``configure.in``) and ``Makefile.am``."""
    configure = next((name for name in CONFIGURE_FILES if tree.has(name)), None)
    if configure is None or not tree.has("Makefile.am"):
        return None
    facts = AutotoolsFacts(configure=configure, has_configure_script=tree.has("configure"))
    data = tree.read(configure, MAX_BYTES) or b""
    for name, arguments in nested_calls(data.decode("utf-8", errors="replace")):
        facts.cxx = facts.cxx or name == "AC_PROG_CXX"
        if name == "AC_INIT" and arguments and facts.project is None:
            facts.project = arguments[0].strip() or None
        elif name == "PKG_CHECK_MODULES" and len(arguments) >= 2:
            facts.modules += pkg_config_modules(arguments[1])
        elif name == "AC_CHECK_LIB" and arguments and "$" not in arguments[0]:
            facts.libraries.append(arguments[0].strip())
        elif name == "AC_SEARCH_LIBS" and len(arguments) >= 2:
            facts.libraries += [w for w in arguments[1].split() if "$" not in w]
    for name in tree.names:
        if name.rsplit("/", 1)[-1] == "Makefile.am" and not facts.automake_tests:
            text = (tree.read(name, MAX_BYTES) or b"").decode("utf-8", errors="replace")
            facts.automake_tests = any(
                line.split("=", 1)[0].strip() in ("TESTS", "TESTS +")
                for line in text.splitlines()
                if "=" in line
            )
    return facts
