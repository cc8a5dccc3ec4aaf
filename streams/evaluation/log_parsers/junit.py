"""JUnit XML, as every runner that writes it does (pytest, Surefire, and the C/C++ frameworks'
reporters): the report's root, its testcases, a testcase's status and the worse of two.

A testcase's status comes from its children: ``<failure>`` -> failed, ``<error>`` -> error,
``<skipped>`` -> skipped, none of them -> passed; where one test has several (a rerun, a
second testcase for its teardown), the worst counts. What a testcase's id is stays each
runner's own (``classname``/``name``/``file``, as it spells them). A report with a DOCTYPE or
an ENTITY declaration is refused (entities are never expanded), as is one that is no XML.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator

from schemas.tasks import TestStatus
from streams.evaluation.recipes.sources.loaders import XmlRefused, parse_xml

STATUS_RANK: dict[TestStatus, int] = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}
CHILD_STATUS: dict[str, TestStatus] = {"failure": "failed", "error": "error", "skipped": "skipped"}
ROOTS = ("testsuites", "testsuite")


def local(tag: str) -> str:
    """A tag without its ``{namespace}``."""
    return tag.rsplit("}", 1)[-1]


def report_root(text: str | bytes, what: str = "JUnit XML report") -> ElementTree.Element:
    """The root of a JUnit XML report; ValueError naming ``what`` when it is none."""
    try:
        root = parse_xml(text)
    except XmlRefused:
        raise ValueError(
            f"{what} with a DOCTYPE or an ENTITY declaration is refused "
            "(entities are never expanded)"
        ) from None
    except ValueError as error:
        problem = str(error).removeprefix("malformed XML: ")
        raise ValueError(f"malformed {what}: {problem}") from None
    if local(root.tag) not in ROOTS:
        raise ValueError(
            f"not a {what}: root element <{local(root.tag)}>, expected <testsuites> or <testsuite>"
        )
    return root


def testcases(root: ElementTree.Element) -> Iterator[ElementTree.Element]:
    """Every ``<testcase>`` of a report, in document order, whatever its namespace."""
    return (element for element in root.iter() if local(element.tag) == "testcase")


def case_status(case: ElementTree.Element) -> TestStatus:
    """A testcase's status from its children (the worst of them; none: passed)."""
    status: TestStatus = "passed"
    for child in case:
        found = CHILD_STATUS.get(local(child.tag))
        if found is not None:
            status = worse(status, found)
    return status


def worse(first: TestStatus, second: TestStatus) -> TestStatus:
    """The worse of two statuses of one test (failed > error > skipped > passed)."""
    return second if STATUS_RANK.get(second, 0) > STATUS_RANK.get(first, 0) else first


def record(statuses: dict[str, TestStatus], test: str, status: TestStatus) -> None:
    """Keep ``status`` for ``test`` unless the statuses already hold a worse one."""
    known = statuses.get(test)
    statuses[test] = status if known is None else worse(known, status)
