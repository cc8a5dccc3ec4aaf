"""noxfile.py, read without running it: its ``@nox.session`` functions, their Pythons and, for
test sessions, what they install and run (literal arguments only, by ``ast``).
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field
from typing import Any

from streams.evaluation.recipes.languages.python.common import parse_python
from streams.evaluation.recipes.languages.python.setup_py import (
    Evaluator,
    NotLiteral,
    scope_assignments,
)
from streams.evaluation.recipes.sources.tree import SourceTree


@dataclass(frozen=True)
class NoxSession:
    """A ``@nox.session``; ``installs`` and ``commands`` are read for test sessions only."""

    name: str
    pythons: list[str] = field(default_factory=list)
    installs: list[list[str]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NoxFacts:
    path: str
    sessions: list[NoxSession] = field(default_factory=list)


def _nox_decorator(node: ast.expr) -> ast.Call | bool:
    """True/the Call for ``@nox.session``/``@session(...)``; False for other decorators."""
    target = node.func if isinstance(node, ast.Call) else node
    is_session = (isinstance(target, ast.Attribute) and target.attr == "session") or (
        isinstance(target, ast.Name) and target.id == "session"
    )
    if not is_session:
        return False
    return node if isinstance(node, ast.Call) else True


def _nox_pythons(value: Any) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str | int | float):
        return [str(value)]
    if isinstance(value, list):
        return [str(item) for item in value if isinstance(item, str | int | float)]
    return []


def _nox_args(call: ast.Call, evaluator: Evaluator, param: str) -> tuple[list[str], bool]:
    args: list[str] = []
    complete = True
    for arg in call.args:
        node = arg.value if isinstance(arg, ast.Starred) else arg
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) == (param, "posargs")
        ):
            continue
        try:
            value = evaluator.eval(node)
        except (NotLiteral, RecursionError):
            complete = False
            continue
        if isinstance(value, str):
            args.append(value)
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            args.extend(value)
        else:
            complete = False
    return args, complete


def _nox_session(
    tree: SourceTree,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    decorator: ast.Call | bool,
    evaluator: Evaluator,
) -> NoxSession:
    name = function.name
    pythons: list[str] = []
    if isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            try:
                value = evaluator.eval(keyword.value)
            except (NotLiteral, RecursionError):
                if keyword.arg in {"python", "py"}:
                    tree.problem(f"noxfile.py: session {name}: python= not a literal")
                continue
            if keyword.arg == "name" and isinstance(value, str):
                name = value
            elif keyword.arg in {"python", "py"}:
                pythons = _nox_pythons(value)
    if "test" not in name.lower():
        return NoxSession(name, pythons)
    param = function.args.args[0].arg if function.args.args else "session"
    calls = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == param
    ]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    installs: list[list[str]] = []
    commands: list[str] = []
    for call in calls:
        method = call.func.attr  # type: ignore[attr-defined]
        if method not in {"install", "conda_install", "run", "run_always", "run_install"}:
            continue
        args, complete = _nox_args(call, evaluator, param)
        if method in {"install", "conda_install"}:
            if not complete:
                tree.problem(f"noxfile.py: session {name}: {param}.{method}() not all literal")
            if args:
                installs.append(args)
        elif args:
            commands.append(shlex.join(args))
    return NoxSession(name, pythons, installs, commands)


def read_nox(tree: SourceTree) -> NoxFacts | None:
    if not tree.has("noxfile.py"):
        return None
    module = parse_python(tree, "noxfile.py")
    if module is None:
        return NoxFacts("noxfile.py")
    evaluator = Evaluator([scope_assignments(module.body)])
    sessions = []
    for statement in module.body:
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in statement.decorator_list:
            found = _nox_decorator(decorator)
            if found is not False:
                sessions.append(_nox_session(tree, statement, found, evaluator))
                break
    return NoxFacts("noxfile.py", sessions)
