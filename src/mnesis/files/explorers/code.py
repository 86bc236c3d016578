"""Explorers of source code: Python (``ast``) here; TypeScript/JavaScript (regex) in
:mod:`.javascript` and SQL (DDL) in :mod:`.sql`, re-exported.

Python is parsed with ``ast`` up to :data:`PARSE_LIMIT_BYTES`, and scanned line by
line above it. TypeScript/JavaScript and SQL are always scanned line by line, so
their memory use does not grow with the file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mnesis.files.explorers._common import (
    MAX_IMPORTS,
    MAX_MEMBERS,
    PARSE_LIMIT_BYTES,
    ExplorationError,
    LineReader,
    SummaryBuilder,
    read_text,
)
from mnesis.files.explorers._format import clip, fmt_bytes, fmt_int, join_names, plural
from mnesis.files.explorers.javascript import explore_javascript, explore_typescript
from mnesis.files.explorers.sql import explore_sql

__all__ = ["explore_javascript", "explore_python", "explore_sql", "explore_typescript"]


# -- Python --------------------------------------------------------------------
def explore_python(path: Path, size: int) -> str:
    """Docstring, imports, ``__all__``, constants, classes with methods, functions."""
    if size > PARSE_LIMIT_BYTES:
        return _python_line_scan(path)
    source = read_text(path)
    try:
        tree = ast.parse(source, filename=path.name)
    except SyntaxError as exc:
        raise ExplorationError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        raise ExplorationError(str(exc)) from None
    lines = source.count("\n") + (bool(source) and not source.endswith("\n"))
    out = SummaryBuilder()
    out.add(f"Python module: {plural(lines, 'line')}")
    docstring = ast.get_docstring(tree)
    if docstring:
        out.add(f"Docstring: {clip(docstring.strip().splitlines()[0], 160)}")
    imports = _python_imports(tree)
    if imports:
        out.add(f"Imports ({fmt_int(len(imports))}): {join_names(imports, MAX_IMPORTS)}", limit=800)
    exported, constants = _python_names(tree)
    if exported:
        out.add(f"__all__ ({fmt_int(len(exported))}): {join_names(exported, MAX_MEMBERS)}")
    if constants:
        out.add(f"Constants: {join_names(constants, 20)}")
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if classes:
        out.add(f"Classes ({fmt_int(len(classes))}):")
        for node in classes:
            _python_class(node, out)
    if functions:
        out.add(f"Functions ({fmt_int(len(functions))}):")
        for function in functions:
            out.add(f"  {_signature(function)}  (line {function.lineno})")
    if any(_is_main_guard(node) for node in tree.body):
        out.add('Has an `if __name__ == "__main__":` block.')
    return out.text()


def _python_imports(tree: ast.Module) -> list[str]:
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(dict.fromkeys(alias.name for alias in node.names))
        elif isinstance(node, ast.ImportFrom):
            found["." * node.level + (node.module or "")] = None
    return list(found)


def _python_names(tree: ast.Module) -> tuple[list[str], list[str]]:
    """``(__all__ entries, UPPER_CASE module constants)``."""
    exported: list[str] = []
    constants: list[str] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id == "__all__" and isinstance(value, ast.List | ast.Tuple):
                exported = [
                    e.value
                    for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
            elif target.id.isupper() and target.id not in constants:
                constants.append(target.id)
    return exported, constants


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    decorators = " ".join(clip("@" + ast.unparse(d), 40) for d in node.decorator_list)
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {clip(ast.unparse(node.returns), 40)}" if node.returns else ""
    text = f"{prefix} {node.name}({clip(ast.unparse(node.args), 120)}){returns}"
    return f"{decorators} {text}" if decorators else text


def _python_class(node: ast.ClassDef, out: SummaryBuilder) -> None:
    bases = ", ".join(clip(ast.unparse(b), 40) for b in [*node.bases, *node.keywords])
    out.add(f"  class {node.name}{f'({bases})' if bases else ''}  (line {node.lineno})")
    doc = ast.get_docstring(node)
    if doc:
        out.add(f'    "{clip(doc.strip().splitlines()[0], 120)}"')
    members = [
        child
        for child in node.body
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    for child in members[:MAX_MEMBERS]:
        if isinstance(child, ast.ClassDef):
            out.add(f"    class {child.name}  (line {child.lineno})")
        else:
            out.add(f"    {_signature(child)}")
    if len(members) > MAX_MEMBERS:
        out.add(f"    … {fmt_int(len(members) - MAX_MEMBERS)} more members")


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    left = node.test.left
    return isinstance(left, ast.Name) and left.id == "__name__"


_PY_DEF = re.compile(r"^(\s*)(async\s+def|def|class)\s+([A-Za-z_]\w*)\s*(\([^)]*\)?)?")
_PY_IMPORT = re.compile(r"^(?:from\s+(\.*[\w.]*)\s+import\b|import\s+([\w.]+))")


def _python_line_scan(path: Path) -> str:
    imports: dict[str, None] = {}
    classes: list[str] = []
    functions: list[str] = []
    with LineReader(path) as reader:
        for line in reader:
            match = _PY_IMPORT.match(line)
            if match is not None:
                imports[match.group(1) or match.group(2)] = None
                continue
            match = _PY_DEF.match(line)
            if match is None:
                continue
            indent, kind, name, args = match.groups()
            text = f"{kind} {name}{clip(args or '', 100)}  (line {fmt_int(reader.line_count)})"
            if not indent:
                (classes if kind == "class" else functions).append(text)
            elif classes and len(indent) <= 8 and kind != "class":
                classes.append(f"  {text}")
        lines, truncated = reader.line_count, reader.truncated
    out = SummaryBuilder()
    out.add(
        f"Python module (larger than {fmt_bytes(PARSE_LIMIT_BYTES)}: outline from a line scan), "
        f"{plural(lines, 'line')}{' scanned' if truncated else ''}"
    )
    if imports:
        out.add(f"Imports: {join_names(list(imports), MAX_IMPORTS)}")
    for title, items in (("Classes:", classes), ("Functions:", functions)):
        if items:
            out.add(title)
            for item in items:
                if not out.add(f"  {item}"):
                    break
    return out.text()
