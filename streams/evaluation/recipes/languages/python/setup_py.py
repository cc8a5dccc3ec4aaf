"""setup.py, read without running it: the ``setup(...)`` calls' keyword arguments evaluated by
``ast`` when they are literals, following names to their single literal assignment (module or
enclosing function) and ``**kwargs`` dicts; what is not literal is a problem, never guessed.
The ``Evaluator`` also reads noxfile.py's arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from streams.evaluation.recipes.languages.python.common import MAX_DEPTH, Metadata, parse_python
from streams.evaluation.recipes.languages.python.requirements import checked_requirements
from streams.evaluation.recipes.languages.python.setup_cfg import cfg_list
from streams.evaluation.recipes.sources.loaders import string_list
from streams.evaluation.recipes.sources.tree import SourceTree

MAX_EVAL_STEPS = 50_000
MAX_LITERAL_SIZE = 100_000


class NotLiteral(Exception):
    pass


Scope = dict[str, list[ast.expr]]


def scope_assignments(body: list[ast.stmt]) -> Scope:
    """Names assigned in these statements (and nested blocks, not nested functions/classes)."""
    scope: Scope = {}
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    scope.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            scope.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            scope.setdefault(node.target.id, []).append(node)  # type: ignore[arg-type]
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                stack.append(child)
            elif isinstance(child, ast.ExceptHandler):
                stack.extend(child.body)
    return scope


class Evaluator:
    """Evaluates literal expressions, following names to their single literal assignment."""

    def __init__(self, scopes: list[Scope]):
        self.scopes = scopes
        self.steps = 0
        self.names: dict[str, Any] = {}

    def assignments(self, name: str) -> list[ast.expr]:
        for scope in self.scopes:
            if name in scope:
                return scope[name]
        return []

    def eval(self, node: ast.AST, depth: int = 0) -> Any:
        self.steps += 1
        if depth > MAX_DEPTH or self.steps > MAX_EVAL_STEPS:
            raise NotLiteral
        value = self._eval(node, depth)
        if isinstance(value, list | dict | str) and len(value) > MAX_LITERAL_SIZE:
            raise NotLiteral
        return value

    def _eval(self, node: ast.AST, depth: int) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items: list[Any] = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    items.extend(self._sequence(self.eval(element.value, depth + 1)))
                else:
                    items.append(self.eval(element, depth + 1))
            return items
        if isinstance(node, ast.Dict):
            result: dict[Any, Any] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    spread = self.eval(value, depth + 1)
                    if not isinstance(spread, dict):
                        raise NotLiteral
                    result.update(spread)
                else:
                    result[self.eval(key, depth + 1)] = self.eval(value, depth + 1)
            return result
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.eval(node.left, depth + 1), self.eval(node.right, depth + 1)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            raise NotLiteral
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "dict" and not node.args:
                return {kw.arg: self.eval(kw.value, depth + 1) for kw in node.keywords if kw.arg}
            if node.func.id in {"list", "tuple"} and len(node.args) == 1 and not node.keywords:
                return self._sequence(self.eval(node.args[0], depth + 1))
        raise NotLiteral

    @staticmethod
    def _sequence(value: Any) -> list[Any]:
        if isinstance(value, list):
            return value
        raise NotLiteral

    def _name(self, name: str, depth: int) -> Any:
        if name in self.names:
            return self.names[name]
        values = self.assignments(name)
        if not values or any(not isinstance(value, ast.expr) for value in values):
            raise NotLiteral
        results = [self.eval(value, depth + 1) for value in values]
        if any(result != results[0] for result in results[1:]):
            raise NotLiteral
        self.names[name] = results[0]
        return results[0]

    def keyword_exprs(self, node: ast.expr, depth: int = 0) -> dict[str, ast.expr] | None:
        """The keyword expressions of a ``**kwargs`` dict, without evaluating their values."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Dict):
            found = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    return None
                found[key.value] = value
            return found
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
        ):
            if node.args:
                return None
            return {kw.arg: kw.value for kw in node.keywords if kw.arg}
        if isinstance(node, ast.Name):
            values = self.assignments(node.id)
            if len(values) == 1:
                return self.keyword_exprs(values[0], depth + 1)
        return None


def call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


_EXTENSION_CALLS = frozenset(
    {
        "Extension",
        "Pybind11Extension",
        "CppExtension",
        "CUDAExtension",
        "cythonize",
        "RustExtension",
    }
)
_SETUP_KEYWORDS = (
    "name",
    "python_requires",
    "install_requires",
    "extras_require",
    "setup_requires",
    "tests_require",
    "classifiers",
    "use_scm_version",
    "ext_modules",
    "test_suite",
)
_MUST_BE_LITERAL = frozenset(
    {"install_requires", "extras_require", "python_requires", "setup_requires", "tests_require"}
)


def _setup_calls(module: ast.Module) -> Iterator[tuple[ast.Call, list[Scope]]]:
    module_scope = scope_assignments(module.body)
    functions = [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    inside: set[int] = set()
    for function in functions:
        local = scope_assignments(function.body)
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and call_name(node) == "setup" and id(node) not in inside:
                inside.add(id(node))
                yield node, [local, module_scope]
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and call_name(node) == "setup" and id(node) not in inside:
            yield node, [module_scope]


def read_setup_py(tree: SourceTree, acc: Metadata) -> None:
    module = parse_python(tree, "setup.py")
    if module is None:
        return
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and call_name(node) in _EXTENSION_CALLS:
            acc.c_extensions = True
    values: dict[str, Any] = {}
    for call, scopes in _setup_calls(module):
        evaluator = Evaluator(scopes)
        exprs: dict[str, ast.expr] = {}
        for keyword in call.keywords:
            if keyword.arg is not None:
                exprs.setdefault(keyword.arg, keyword.value)
                continue
            spread = evaluator.keyword_exprs(keyword.value)
            if spread is None:
                tree.problem("setup.py: setup(**...) arguments not literal; not read")
                continue
            for key, value in spread.items():
                exprs.setdefault(key, value)
        for key in _SETUP_KEYWORDS:
            if key not in exprs or key in values:
                continue
            try:
                values[key] = evaluator.eval(exprs[key])
            except (NotLiteral, RecursionError):
                values[key] = NotLiteral
                if key in _MUST_BE_LITERAL:
                    tree.problem(f"setup.py: {key}= is not a literal; not read")
                elif key == "ext_modules":
                    _ext_modules_problem(tree, evaluator, exprs[key], acc)
                elif key == "use_scm_version":
                    acc.scm_version = True
    _apply_setup_values(tree, acc, values)


def _ext_modules_problem(
    tree: SourceTree, evaluator: Evaluator, expr: ast.expr, acc: Metadata
) -> None:
    candidates = evaluator.assignments(expr.id) if isinstance(expr, ast.Name) else [expr]
    for candidate in candidates:
        for node in ast.walk(candidate):
            if isinstance(node, ast.Call):
                name = call_name(node)
                if name in _EXTENSION_CALLS:
                    acc.c_extensions = True
                elif name:
                    tree.problem(f"setup.py: ext_modules built by {name}(...); not read")
                    return


def _apply_setup_values(tree: SourceTree, acc: Metadata, values: dict[str, Any]) -> None:
    def strings(key: str) -> list[str]:
        value = values.get(key)
        if isinstance(value, str):
            return cfg_list(value, "\n")
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []

    if isinstance(values.get("name"), str) and acc.project_name is None:
        acc.project_name = values["name"]
    if isinstance(values.get("python_requires"), str) and acc.requires_python is None:
        acc.requires_python = values["python_requires"]
    acc.add_classifiers(strings("classifiers"))
    if isinstance(values.get("install_requires"), list | str):
        acc.set_dependencies(checked_requirements(strings("install_requires"), "setup.py", tree))
    acc.setup_requires.extend(checked_requirements(strings("setup_requires"), "setup.py", tree))
    acc.tests_require.extend(checked_requirements(strings("tests_require"), "setup.py", tree))
    extras = values.get("extras_require")
    if isinstance(extras, dict):
        found: dict[str, list[str]] = {}
        for name, reqs in extras.items():
            items = cfg_list(reqs, "\n") if isinstance(reqs, str) else string_list(reqs)
            found[str(name)] = checked_requirements(items, f"setup.py extras_require[{name}]", tree)
        acc.add_extras(found)
    scm = values.get("use_scm_version")
    if scm is not None and scm is not NotLiteral and scm is not False:
        acc.scm_version = True
    ext = values.get("ext_modules")
    if isinstance(ext, list) and ext:
        acc.c_extensions = True
    if values.get("test_suite") not in (None, NotLiteral):
        acc.test_suite = True
