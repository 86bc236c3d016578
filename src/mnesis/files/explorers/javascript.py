"""Explorer of TypeScript and JavaScript sources: a line scan with regular expressions,
so memory use does not grow with the file."""

from __future__ import annotations

import re
from pathlib import Path

from mnesis.files.explorers._common import MAX_IMPORTS, MAX_MEMBERS, LineReader, SummaryBuilder
from mnesis.files.explorers._format import clip, fmt_int, join_names, plural

__all__ = ["explore_javascript", "explore_typescript"]

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
        out.add(f"Imports ({fmt_int(len(imports))}): {join_names(imports, MAX_IMPORTS)}", limit=800)
    if outline.exports:
        out.add(f"Exports ({fmt_int(len(outline.exports))}): {join_names(outline.exports, 60)}")
    if outline.classes:
        out.add(f"Classes ({fmt_int(len(outline.classes))}):")
        for header, methods in outline.classes:
            out.add(f"  {header}")
            if methods:
                out.add(f"    methods: {join_names([m + '()' for m in methods], MAX_MEMBERS)}")
    if outline.functions:
        out.add(f"Functions ({fmt_int(len(outline.functions))}):")
        for function in outline.functions:
            if not out.add(f"  {function}"):
                break
    if outline.types:
        out.add(f"Types ({fmt_int(len(outline.types))}): {join_names(outline.types, 60)}")
    return out.text()
