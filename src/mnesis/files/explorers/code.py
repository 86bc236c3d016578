"""Explorers of source code: Python (``ast``), TypeScript/JavaScript (regex), SQL (DDL).

Python is parsed with ``ast`` up to :data:`PARSE_LIMIT_BYTES`, and scanned line by
line above it. TypeScript/JavaScript and SQL are always scanned line by line, so
their memory use does not grow with the file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mnesis.files.explorers._common import (
    PARSE_LIMIT_BYTES,
    ExplorationError,
    LineReader,
    SummaryBuilder,
    clip,
    fmt_bytes,
    fmt_int,
    plural,
    read_text,
)

__all__ = ["explore_javascript", "explore_python", "explore_sql", "explore_typescript"]

_MAX_IMPORTS = 40
_MAX_MEMBERS = 40


def _join(names: list[str], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … {fmt_int(len(names) - limit)} more" if len(names) > limit else "")


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
        out.add(f"Imports ({fmt_int(len(imports))}): {_join(imports, _MAX_IMPORTS)}", limit=800)
    exported, constants = _python_names(tree)
    if exported:
        out.add(f"__all__ ({fmt_int(len(exported))}): {_join(exported, _MAX_MEMBERS)}")
    if constants:
        out.add(f"Constants: {_join(constants, 20)}")
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
    for child in members[:_MAX_MEMBERS]:
        if isinstance(child, ast.ClassDef):
            out.add(f"    class {child.name}  (line {child.lineno})")
        else:
            out.add(f"    {_signature(child)}")
    if len(members) > _MAX_MEMBERS:
        out.add(f"    … {fmt_int(len(members) - _MAX_MEMBERS)} more members")


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
        out.add(f"Imports: {_join(list(imports), _MAX_IMPORTS)}")
    for title, items in (("Classes:", classes), ("Functions:", functions)):
        if items:
            out.add(title)
            for item in items:
                if not out.add(f"  {item}"):
                    break
    return out.text()


# -- TypeScript / JavaScript -------------------------------------------------
_JS_STRINGS = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`""")
_JS_IMPORT = re.compile(
    r"""^\s*(?:import\b[^'"]*?\bfrom\s*|import\s*|\}\s*from\s*|export\s+(?:type\s+)?"""
    r"""(?:\*|\{[^}]*\})(?:\s+as\s+[\w$]+)?\s+from\s*)['"]([^'"]+)['"]"""
)
_JS_REQUIRE = re.compile(r"""\brequire\(\s*['"]([^'"]+)['"]\s*\)""")
_JS_EXPORT_DECL = re.compile(
    r"^\s*export\s+(default\s+)?(?:declare\s+)?(?:async\s+)?"
    r"(function\s*\*?|abstract\s+class|class|const|let|var|interface|type|enum|namespace)"
    r"\s+([\w$]+)"
)
_JS_EXPORT_LIST = re.compile(r"^\s*export\s+(?:type\s+)?\{([^}]*)\}(?!\s*from)")
_JS_EXPORT_DEFAULT = re.compile(r"^\s*export\s+default\s+([\w$.]+)")
_JS_CJS_EXPORT = re.compile(r"^\s*(?:module\.)?exports(?:\.([\w$]+))?\s*=")
_JS_CLASS = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?class\s+([\w$]+)"
    r"(?:\s*<[^{]*?>)?(?:\s+extends\s+([\w$.]+))?"
)
_JS_FUNCTION = re.compile(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([\w$]+)"
    r"\s*(?:<[^(]*>)?\s*\(([^)]*)\)?(?:\s*:\s*([^{;]+))?"
)
_JS_ARROW = re.compile(
    r"^\s*(?:export\s+)?(?:const|let|var)\s+([\w$]+)\s*(?::[^=]*)?=\s*(async\s+)?"
    r"(?:function\b[^(]*\(([^)]*)\)?|\(([^)]*)\)\s*(?::\s*[^=]*)?=>|([\w$]+)\s*=>)"
)
_JS_TYPE = re.compile(r"^\s*(?:export\s+)?(?:declare\s+)?(interface|type|enum)\s+([\w$]+)")
_JS_METHOD = re.compile(
    r"^\s*(?:(?:public|private|protected|static|async|readonly|abstract|override|get|set|"
    r"declare)\s+)*(\*?#?[\w$]+)\s*(?:<[^(]*>)?\s*\("
)
_JS_KEYWORDS = frozenset(
    "if for while switch catch return function new typeof await yield super do else".split()
)


def explore_typescript(path: Path, size: int) -> str:
    """Imports, exports, classes with methods, functions, interfaces and types."""
    return _explore_js(path, "TypeScript")


def explore_javascript(path: Path, size: int) -> str:
    """Imports, exports, classes with methods and functions."""
    return _explore_js(path, "JavaScript")


class _JsOutline:
    def __init__(self) -> None:
        self.imports: dict[str, None] = {}
        self.exports: list[str] = []
        self.classes: list[tuple[str, list[str]]] = []
        self.functions: list[str] = []
        self.types: list[str] = []

    def top_level(self, line: str, number: int) -> bool:
        """Record declarations on a top-level line; True if it opens a class."""
        if match := _JS_EXPORT_DECL.match(line):
            default, kind, name = match.groups()
            kind = " ".join(kind.replace("*", "").split())
            self.exports.append(f"{'default ' if default else ''}{kind} {name}")
        elif match := _JS_EXPORT_LIST.match(line):
            self.exports.extend(n.strip() for n in match.group(1).split(",") if n.strip())
        elif match := _JS_EXPORT_DEFAULT.match(line):
            self.exports.append(f"default {match.group(1)}")
        elif match := _JS_CJS_EXPORT.match(line):
            self.exports.append(f"module.exports{'.' + match.group(1) if match.group(1) else ''}")
        if match := _JS_CLASS.match(line):
            extends = f" extends {match.group(2)}" if match.group(2) else ""
            self.classes.append((f"class {match.group(1)}{extends}  (line {number})", []))
            return True
        if match := _JS_FUNCTION.match(line):
            name, params, returns = match.groups()
            ret = f": {clip(returns.strip(), 40)}" if returns and returns.strip() else ""
            self.functions.append(
                f"function {name}({clip(params or '', 100)}){ret}  (line {number})"
            )
        elif match := _JS_ARROW.match(line):
            name, is_async, fn_params, params, single = match.groups()
            shown = clip(fn_params or params or single or "", 100)
            self.functions.append(
                f"const {name} = {'async ' if is_async else ''}({shown}) =>  (line {number})"
            )
        elif match := _JS_TYPE.match(line):
            self.types.append(f"{match.group(1)} {match.group(2)}")
        return False


def _explore_js(path: Path, language: str) -> str:
    outline = _JsOutline()
    depth = 0
    class_depth: int | None = None
    in_comment = False
    with LineReader(path) as reader:
        for line in reader:
            number = reader.line_count
            if match := _JS_IMPORT.match(line):
                outline.imports[match.group(1)] = None
            for match in _JS_REQUIRE.finditer(line):
                outline.imports[match.group(1)] = None
            code, in_comment = _js_code(line, in_comment)
            before = depth
            opens_class = False
            if before == 0 and code.strip():
                opens_class = outline.top_level(line, number)
            elif class_depth is not None and before == class_depth + 1 and outline.classes:
                method = _JS_METHOD.match(code)
                if method and method.group(1) not in _JS_KEYWORDS:
                    outline.classes[-1][1].append(method.group(1))
            depth = max(0, depth + code.count("{") - code.count("}"))
            if opens_class:
                class_depth = before
            elif class_depth is not None and before > class_depth and depth <= class_depth:
                class_depth = None
        lines, truncated = reader.line_count, reader.truncated
    return _render_js(outline, language, lines, truncated)


def _js_code(line: str, in_comment: bool) -> tuple[str, bool]:
    """``line`` without string literals and comments; whether a block comment stays open."""
    if in_comment:
        end = line.find("*/")
        if end < 0:
            return "", True
        line = line[end + 2 :]
    line = _JS_STRINGS.sub('""', line)
    while (start := line.find("/*")) >= 0:
        end = line.find("*/", start + 2)
        if end < 0:
            return line[:start], True
        line = line[:start] + line[end + 2 :]
    comment = line.find("//")
    return (line[:comment] if comment >= 0 else line), False


def _render_js(outline: _JsOutline, language: str, lines: int, truncated: bool) -> str:
    out = SummaryBuilder()
    note = " (scan stopped early)" if truncated else ""
    out.add(f"{language} module: {plural(lines, 'line')}{note}")
    if outline.imports:
        imports = list(outline.imports)
        out.add(f"Imports ({fmt_int(len(imports))}): {_join(imports, _MAX_IMPORTS)}", limit=800)
    if outline.exports:
        out.add(f"Exports ({fmt_int(len(outline.exports))}): {_join(outline.exports, 60)}")
    if outline.classes:
        out.add(f"Classes ({fmt_int(len(outline.classes))}):")
        for header, methods in outline.classes:
            out.add(f"  {header}")
            if methods:
                out.add(f"    methods: {_join([m + '()' for m in methods], _MAX_MEMBERS)}")
    if outline.functions:
        out.add(f"Functions ({fmt_int(len(outline.functions))}):")
        for function in outline.functions:
            if not out.add(f"  {function}"):
                break
    if outline.types:
        out.add(f"Types ({fmt_int(len(outline.types))}): {_join(outline.types, 60)}")
    return out.text()


# -- SQL -----------------------------------------------------------------------
_SQL_NAME = (
    r"""(?:[\w$]+|"[^"]+"|`[^`]+`|\[[^\]]+\])(?:\s*\.\s*(?:[\w$]+|"[^"]+"|`[^`]+`|\[[^\]]+\]))*"""
)
_SQL_CREATE_TABLE = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP(?:ORARY)?\s+|UNLOGGED\s+)?"
    rf"(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?({_SQL_NAME})",
    re.IGNORECASE,
)
_SQL_CREATE_OTHER = re.compile(
    r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:UNIQUE\s+)?(?:MATERIALIZED\s+)?"
    r"(INDEX|VIEW|TRIGGER|FUNCTION|PROCEDURE|SEQUENCE|TYPE|SCHEMA|EXTENSION)\s+"
    rf"(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?({_SQL_NAME})",
    re.IGNORECASE,
)
_SQL_INSERT = re.compile(
    rf"^\s*INSERT\s+(?:OR\s+\w+\s+|IGNORE\s+)?INTO\s+({_SQL_NAME})", re.IGNORECASE
)
_SQL_LITERAL = re.compile(r"'(?:[^']|'')*'")
_SQL_CONSTRAINT = (
    "CONSTRAINT",
    "PRIMARY KEY",
    "FOREIGN KEY",
    "UNIQUE",
    "CHECK",
    "KEY ",
    "INDEX ",
    "EXCLUDE",
    "FULLTEXT",
)
_MAX_STATEMENT_CHARS = 64 * 1024


def explore_sql(path: Path, size: int) -> str:
    """``CREATE TABLE`` names with their columns, other objects, ``INSERT`` counts."""
    tables: list[tuple[str, str]] = []
    others: dict[str, list[str]] = {}
    inserts: dict[str, int] = {}
    statement: list[str] | None = None
    with LineReader(path) as reader:
        for line in reader:
            if statement is not None:
                statement.append(_sql_code(line))
                done = _sql_table(statement)
                if done is not None:
                    tables.append(done)
                    statement = None
                continue
            if match := _SQL_INSERT.match(line):
                name = _sql_unquote(match.group(1))
                if name in inserts or len(inserts) < 200:
                    inserts[name] = inserts.get(name, 0) + 1
                continue
            code = _sql_code(line)
            if match := _SQL_CREATE_TABLE.search(code):
                statement = [code[match.start() :]]
                done = _sql_table(statement)
                if done is not None:
                    tables.append(done)
                    statement = None
            elif match := _SQL_CREATE_OTHER.search(code):
                others.setdefault(match.group(1).upper(), []).append(_sql_unquote(match.group(2)))
        lines, truncated = reader.line_count, reader.truncated
    if statement is not None:
        tables.append(_sql_table(statement, final=True) or ("?", ""))
    return _render_sql(tables, others, inserts, lines, truncated)


def _sql_code(line: str) -> str:
    """``line`` without its ``--`` comment (a ``--`` inside a string literal is kept)."""
    masked = _SQL_LITERAL.sub(lambda m: "'" + " " * (len(m.group()) - 2) + "'", line)
    comment = masked.find("--")
    return line[:comment] if comment >= 0 else line


def _sql_unquote(name: str) -> str:
    return re.sub(r'["`\[\]]', "", re.sub(r"\s+", "", name))


def _sql_table(statement: list[str], *, final: bool = False) -> tuple[str, str] | None:
    """``(name, column list)`` once the statement is complete, else None."""
    text = " ".join(statement)
    match = _SQL_CREATE_TABLE.search(text)
    if match is None:  # pragma: no cover - the first line matched
        return ("?", "")
    name = _sql_unquote(match.group(1))
    rest = text[match.end() :]
    open_at = rest.find("(")
    semicolon = rest.find(";")
    if open_at < 0 or (0 <= semicolon < open_at):
        if semicolon >= 0 or final or len(text) > _MAX_STATEMENT_CHARS:
            return name, "(no column list)"
        return None
    depth = 0
    for index in range(open_at, len(rest)):
        char = rest[index]
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return name, _sql_columns(rest[open_at + 1 : index])
    if final or len(text) > _MAX_STATEMENT_CHARS:
        return name, "(column list not parsed)"
    return None


def _sql_columns(body: str) -> str:
    items: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(body):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            items.append(body[start:index])
            start = index + 1
    items.append(body[start:])
    columns: list[str] = []
    constraints: list[str] = []
    for item in (" ".join(i.split()) for i in items):
        if not item:
            continue
        if item.upper().startswith(_SQL_CONSTRAINT):
            constraints.append(clip(item, 60))
        else:
            columns.append(clip(item, 50))
    text = f"{fmt_int(len(columns))} columns: {', '.join(columns)}"
    return text + (f"; {', '.join(constraints)}" if constraints else "")


def _render_sql(
    tables: list[tuple[str, str]],
    others: dict[str, list[str]],
    inserts: dict[str, int],
    lines: int,
    truncated: bool,
) -> str:
    out = SummaryBuilder()
    note = " (scan stopped early)" if truncated else ""
    out.add(f"SQL script: {plural(lines, 'line')}{note}, {fmt_int(len(tables))} CREATE TABLE")
    if tables:
        out.add("Tables:")
        for name, columns in tables:
            if not out.add(f"  {name}: {columns}", limit=700):
                break
    for kind, names in sorted(others.items()):
        title = "Indexes" if kind == "INDEX" else f"{kind.title()}s"
        out.add(f"{title} ({fmt_int(len(names))}): {_join(names, 30)}")
    if inserts:
        counts = [f"{name} ({fmt_int(n)})" for name, n in inserts.items()]
        out.add(f"INSERT statements: {_join(counts, 30)}")
    return out.text()
