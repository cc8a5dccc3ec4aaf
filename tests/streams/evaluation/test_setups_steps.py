"""Pre-test build steps a repository's CI runs: compiled gettext translations, without which
the new tests are skipped (real Docker, Debian's gettext in the env image)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas import ValidatedTask
from streams.evaluation.validator import REBUILD_FAILED, TESTS_SKIPPED
from tests.streams.evaluation.setups import calc_files, validate

pytestmark = pytest.mark.docker

PO = (
    'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
    'msgid "hello"\nmsgstr "hallo"\n'
)
I18N = (
    "import gettext\nimport pathlib\n\n"
    "LOCALE = pathlib.Path(__file__).parent / 'locale'\n\n\n"
    "def greet():\n"
    "    t = gettext.translation('calc', LOCALE, languages=['de'])\n"
    "    return t.gettext('hello').upper()\n"
)
FIXED_I18N = I18N.replace(".upper()", "")
TESTS = (
    "import pathlib\n\nimport pytest\n\n"
    "MO = pathlib.Path(__file__).parent.parent / 'calc/locale/de/LC_MESSAGES/calc.mo'\n"
    "pytestmark = pytest.mark.skipif(not MO.exists(), reason='translations are not compiled')\n\n\n"
    "def test_loads():\n    from calc.i18n import greet\n\n    assert greet()\n"
)
TEST_GREET = (
    "\n\ndef test_greet():\n    from calc.i18n import greet\n\n    assert greet() == 'hallo'\n"
)
WORKFLOW = (
    "name: tests\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
    "      - uses: actions/checkout@v4\n"
    "      - run: sudo apt-get update && sudo apt-get install -y gettext\n"
    "      - run: pip install -e . pytest\n"
    "      - run: msgfmt -o calc/locale/de/LC_MESSAGES/calc.mo calc/locale/de/LC_MESSAGES/calc.po\n"
    "      - run: pytest tests\n"
)


def translated(**extra: str) -> dict[str, str]:
    return calc_files(
        **{
            "calc/i18n.py": I18N,
            "calc/locale/de/LC_MESSAGES/calc.po": PO,
            "tests/test_i18n.py": TESTS,
            **extra,
        }
    )


PR: dict[str, str | None] = {"calc/i18n.py": FIXED_I18N, "tests/test_i18n.py": TESTS + TEST_GREET}


async def test_the_ci_build_step_runs_before_the_tests(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    base = translated(**{".github/workflows/tests.yml": WORKFLOW})
    outcome = await validate(tmp_path, docker_client, python_images, base, PR, attempts=1)
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.install_config is not None
    assert task.FAIL_TO_PASS == ["tests/test_i18n.py::test_greet"]
    assert task.PASS_TO_PASS == ["tests/test_i18n.py::test_loads"]
    assert "gettext" in task.install_config.system_packages
    assert task.install_config.pre_test_commands[0].startswith("msgfmt -o calc/locale")


async def test_without_the_build_step_the_skipped_tests_are_the_reason(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    outcome = await validate(tmp_path, docker_client, python_images, translated(), PR, attempts=1)
    assert (outcome.status, outcome.reason) == ("rejected", TESTS_SKIPPED)
    assert outcome.detail is not None and "after: 2 skipped" in outcome.detail
    assert "translations are not compiled" in outcome.detail


FAST_C = """#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a - b);
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "a + b"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
"""
EXTENSION_SETUP = (
    "from setuptools import Extension, setup\n\n"
    "setup(name='calc', version='1.0', packages=['calc'],\n"
    "      ext_modules=[Extension('calc._fast', ['calc/_fast.c'])])\n"
)
FAST_TESTS = "from calc._fast import add\n\n\ndef test_add_small():\n    assert add(0, 0) == 0\n"
FAST_ADD = "\n\ndef test_add():\n    assert add(2, 3) == 5\n"


async def test_a_fix_to_a_c_extension_is_rebuilt_before_the_tests(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    """simplejson's style: the fix is in the C speedups; the images hold what the base
    commit's sources built, so the sandbox rebuilds them in place after the patch."""
    base = {
        "setup.py": EXTENSION_SETUP,
        "calc/__init__.py": "",
        "calc/_fast.c": FAST_C,
        "tests/test_fast.py": FAST_TESTS,
    }
    pr: dict[str, str | None] = {
        "calc/_fast.c": FAST_C.replace("a - b", "a + b"),
        "tests/test_fast.py": FAST_TESTS + FAST_ADD,
    }
    outcome = await validate(tmp_path, docker_client, python_images, base, pr, attempts=1)
    assert outcome.status == "accepted", outcome.detail
    (task,) = outcome.outputs
    assert isinstance(task, ValidatedTask) and task.install_config is not None
    assert task.FAIL_TO_PASS == ["tests/test_fast.py::test_add"]
    assert {"gcc", "python3-dev"} <= set(task.install_config.system_packages)


async def test_a_fix_whose_extension_does_not_build_is_rebuild_failed(
    tmp_path: Path, docker_client: Any, python_images: dict[str, str]
) -> None:
    base = {
        "setup.py": EXTENSION_SETUP,
        "calc/__init__.py": "",
        "calc/_fast.c": FAST_C,
        "tests/test_fast.py": FAST_TESTS,
    }
    pr: dict[str, str | None] = {
        "calc/_fast.c": FAST_C.replace("a - b", "a + b +"),  # a syntax error
        "tests/test_fast.py": FAST_TESTS + FAST_ADD,
    }
    outcome = await validate(tmp_path, docker_client, python_images, base, pr, attempts=1)
    assert (outcome.status, outcome.reason) == ("rejected", REBUILD_FAILED)
    assert outcome.detail is not None and "build_ext --inplace` exited 1" in outcome.detail
