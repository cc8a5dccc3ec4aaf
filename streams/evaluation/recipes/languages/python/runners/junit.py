"""pytest's JUnit XML report (``--junitxml=PATH``) -> per-test statuses keyed by node id.

The report is machine-readable where the terminal output is not (colours, wrapped lines,
subtests, a test's own output in between), so when a run writes one it is the better source
(``streams.evaluation.log_parsers.combine.merge_statuses`` merges both).

A ``<testcase>`` names its test by ``classname`` -- the node id's path with ``/`` -> ``.`` and
``.py`` dropped, then the classes -- and ``name`` -- the function with its parameters
(``classname="tests.test_ops.TestA" name="test_b[1]"`` is ``tests/test_ops.py::TestA::test_b[1]``).
Where the module path ends is taken from the ``file`` attribute of ``junit_family=xunit1``
(which also strips a ``--junit-prefix`` in front of the path). Without it (``xunit2``, pytest's
default, or a test defined in another file than the one collecting it, e.g. an inherited
method) the path is rebuilt from the dotted classname: the trailing segments starting with an
uppercase letter are the classes, the rest the module (``a.b.test_c.TestD`` ->
``a/b/test_c.py::TestD``). That guess is wrong for a directory or a module whose name has a
dot or starts with an uppercase letter, a class whose name does not, a test file that is not a
``.py`` module (a doctest in ``README.rst``), and a ``--junit-prefix``.

A status from the children of the testcases of one id (pytest writes a second testcase for an
error at teardown after a failed call, and older pytest after a passing one as well):
``<failure>`` -> failed, else ``<error>`` -> error, else ``<skipped>`` (skips and pytest's
xfails, ``type="pytest.xfail"``) -> skipped, else passed (an XPASS too). A module that failed
to be collected (or was skipped whole) is written as a testcase too -- no classname but a
``--junit-prefix``, the module's dotted path as name, a child with the message "collection
failure" / "collection skipped" -- and left out, as the text parser leaves it out: it is no
test. pytest 9 records a failed subtest as a ``<failure>`` of its test.

The XML is parsed by the recipe readers' XML loader (``defusedxml``), which refuses any
DOCTYPE (hence entity declarations: nothing is expanded or fetched); a refused or malformed
report is a ValueError.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from schemas.tasks import TestStatus
from streams.evaluation.log_parsers.junit import case_status, record, report_root, testcases

_COLLECTION_MESSAGES = frozenset({"collection failure", "collection skipped"})


def parse_junit_xml(text: str | bytes) -> dict[str, TestStatus]:
    """Per-test statuses from a JUnit XML report pytest wrote (xunit1 or xunit2)."""
    root = report_root(text)
    statuses: dict[str, TestStatus] = {}
    for case in testcases(root):
        if _is_collection_report(case):
            continue
        test = junit_node_id(case.get("classname", ""), case.get("name", ""), case.get("file"))
        if test is not None:
            record(statuses, test, case_status(case))
    return statuses


def junit_node_id(classname: str, name: str, file: str | None = None) -> str | None:
    """The pytest node id of a JUnit testcase, None when it names no test (no classname)."""
    if not classname or not name:
        return None
    path: str | None = None
    classes: list[str] = []
    if file:
        module = file.replace("\\", "/")
        dotted = re.sub(r"\.py$", "", module).replace("/", ".")
        # the module path at a segment boundary, possibly after a --junit-prefix
        found = re.search(rf"(?:^|\.){re.escape(dotted)}(?:\.|$)", classname)
        if found is not None:
            path = module
            rest = classname[found.end() :]
            classes = rest.split(".") if rest else []
    if path is None:
        path, classes = dotted_path_and_classes(classname)
    return "::".join([path, *classes, name])


def dotted_path_and_classes(dotted: str, *, min_classes: int = 0) -> tuple[str, list[str]]:
    """Split a dotted ``module.Class`` name into the module's file path and the class names.

    The classes are the trailing segments that start with an uppercase letter, at least
    ``min_classes`` of them, and at least one segment is left for the module:
    ``a.b.test_c.TestD.TestE`` -> (``a/b/test_c.py``, [``TestD``, ``TestE``])."""
    segments = dotted.split(".")
    end = len(segments)
    while end > 1 and (segments[end - 1][:1].isupper() or len(segments) - end < min_classes):
        end -= 1
    return "/".join(segments[:end]) + ".py", segments[end:]


def _is_collection_report(case: ElementTree.Element) -> bool:
    return any(child.get("message") in _COLLECTION_MESSAGES for child in case)
