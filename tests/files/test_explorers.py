"""Type detection and every explorer, on real files of each type and on malformed ones."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from types import ModuleType

import pytest

from mnesis.files import EXPLORERS, detect_file_type, explore
from mnesis.files.detect import is_binary_data
from mnesis.files.explorers import code, data

# -- fixtures: real files --------------------------------------------------------

PYTHON = '''"""Inventory service: stock levels and reorders."""

from __future__ import annotations

import os
from collections import defaultdict
from .models import Item

__all__ = ["Inventory", "reorder"]

MAX_STOCK = 1_000


class Inventory(Base, metaclass=Meta):
    """Tracks items."""

    class Error(Exception):
        pass

    def __init__(self, items: list[Item]) -> None:
        self.items = items

    @property
    def total(self) -> int:
        return len(self.items)

    async def refresh(self, *, force: bool = False) -> None:
        import json


def reorder(item: Item, quantity: int = 1) -> bool:
    return True


async def sync_all() -> None:
    pass


if __name__ == "__main__":
    reorder(None)
'''

TYPESCRIPT = """import React, { useState } from "react";
import type { Props } from './types';
import {
  first,
  second,
} from "../lib/pair";
const fs = require('fs');
export * from "./reexport";

/* a comment that mentions class Fake { */
export interface User { id: number; name: string }
export type Id = string | number;
export enum Color { Red, Green }

export default class App extends React.Component<Props> {
  private state = { n: 1 };
  constructor(props: Props) {
    super(props);
  }
  async load(id: Id): Promise<User> {
    if (id) { return fetch("/x{"); }
  }
  static create() { return new App({}); }
}

export function helper(a: string, b: number): string {
  return a + b;
}
export const add = (x: number, y: number): number => x + y;
function internal() {}
export { internal };
"""

SQL = """-- schema of the shop
CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY,
  email TEXT NOT NULL UNIQUE, -- a comment, with a comma
  nickname TEXT DEFAULT '--none--',
  CONSTRAINT users_email_check CHECK (email <> '')
);
CREATE TABLE "orders" (id SERIAL, user_id INT REFERENCES users(id), total NUMERIC(10, 2));
CREATE INDEX idx_orders_user ON orders(user_id);
CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
INSERT INTO users (email) VALUES ('a@x');
INSERT INTO users (email) VALUES ('b@x');
INSERT INTO orders VALUES (1, 1, 2.5);
"""

MARKDOWN = """---
title: "# not a heading"
---
# Guide

Intro text.

## Install

```bash
# not a heading either
pip install mnesis
```

Usage
-----

### Details ###
"""

TOML = """title = "Example"

[owner]
name = "Tom"
dob = 1979-05-27T07:32:00-08:00

[database]
ports = [8000, 8001]
enabled = true

[servers.alpha]
ip = "10.0.0.1"

[[products]]
name = "Hammer"
sku = 738594937

[[products]]
name = "Nail"
color = "gray"
"""

YAML = """name: demo
version: 1.2
services:
  web:
    image: nginx
    ports: [80, 443]
  db:
    image: postgres
steps:
  - build
  - test
"""


def write(directory: Path, name: str, content: str | bytes) -> Path:
    path = directory / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def summary(path: Path) -> str:
    detected = detect_file_type(path)
    return explore(path, detected.file_type, is_binary=detected.is_binary)


def make_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INT)")
    conn.executemany("INSERT INTO users (name, age) VALUES (?, ?)", [("a", 1)] * 120)
    conn.execute('CREATE TABLE "odd ""name""" (x)')
    conn.execute("CREATE INDEX users_name ON users(name)")
    conn.execute("CREATE VIEW adults AS SELECT * FROM users WHERE age >= 18")
    conn.commit()
    conn.close()
    return path


# -- detection -----------------------------------------------------------------


class TestDetection:
    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("a.py", "python"),
            ("a.JSON", "json"),
            ("a.jsonl", "jsonl"),
            ("a.yml", "yaml"),
            ("a.toml", "toml"),
            ("README.md", "markdown"),
            ("a.csv", "csv"),
            ("a.tsv", "tsv"),
            ("a.tsx", "typescript"),
            ("a.mjs", "javascript"),
            ("schema.sql", "sql"),
            ("main.rs", "rust"),
        ],
    )
    def test_the_extension_decides_first(self, tmp_path: Path, name: str, expected: str) -> None:
        detected = detect_file_type(write(tmp_path, name, "x = 1\n"))
        assert detected.file_type == expected and detected.detected_by == "extension"

    def test_a_sqlite_database_is_known_by_its_header_whatever_its_name(
        self, tmp_path: Path
    ) -> None:
        path = make_sqlite(tmp_path / "data.bin")
        detected = detect_file_type(path)
        assert detected.file_type == "sqlite" and detected.detected_by == "signature"

    def test_a_db_file_that_is_not_sqlite_is_not_called_sqlite(self, tmp_path: Path) -> None:
        assert detect_file_type(write(tmp_path, "notes.db", "plain text\n")).file_type != "sqlite"

    def test_binary_content_without_a_known_extension_is_binary(self, tmp_path: Path) -> None:
        detected = detect_file_type(write(tmp_path, "blob", bytes(range(256)) * 4))
        assert detected.file_type == "binary" and detected.is_binary

    def test_text_without_a_known_extension_is_unknown_or_a_shebang_script(
        self, tmp_path: Path
    ) -> None:
        assert detect_file_type(write(tmp_path, "NOTES", "hello\n"), use_magic=False).file_type == (
            "unknown"
        )
        script = write(tmp_path, "tool", "#!/usr/bin/env python3\nprint(1)\n")
        assert detect_file_type(script).file_type == "python"

    def test_binary_named_like_source_keeps_its_type_but_is_flagged_binary(
        self, tmp_path: Path
    ) -> None:
        detected = detect_file_type(write(tmp_path, "evil.py", b"\x00\xff" * 100))
        assert detected.file_type == "python" and detected.is_binary

    @pytest.mark.parametrize(
        ("head", "binary"),
        [
            (b"", False),
            (b"plain ascii\n", False),
            ("naïve café ünïcode\n".encode(), False),
            ("naïve café, Latin-1\n".encode("latin-1"), False),
            ("é".encode() * 4000 + b"\xc3", False),  # a character cut by the 8 KB window
            (b"text\x00with a NUL", True),
            (bytes(range(1, 32)) * 50 + b"\xff", True),
        ],
    )
    def test_the_binary_check(self, head: bytes, binary: bool) -> None:
        assert is_binary_data(head) is binary


# -- what each explorer says, as a table --------------------------------------------


def says(
    case_id: str,
    name: str,
    content: str | bytes,
    starts: str,
    *contains: str,
    lacks: tuple[str, ...] = (),
) -> object:
    """A file named ``name`` holding ``content`` is summarised by text that starts with
    ``starts``, contains every one of ``contains`` and none of ``lacks``."""
    return pytest.param(name, content, starts, contains, lacks, id=case_id)


JSON_LINES = "\n".join(
    json.dumps({"id": i, **({"note": "x"} if i % 2 else {})}) for i in range(1_500)
)
CSV = (
    "id,name,price,when,ok\n"
    '1,"Smith, J",2.5,2024-01-01,true\n'
    '2,"two\nlines",3,2024-01-02,false\n'
    "3,Bob,,2024-01-03,true\n"
)

SUMMARIES = [
    # Python
    says("python-syntax-error-fallback", "broken.py", "def f(:\n    pass\n",
         "Could not be parsed as Python: syntax error at line 1", "2 lines", "1| def f(:"),
    says("python-named-binary-shows-bytes", "evil.py", b"\x00\x01binary\xff" * 100,
         "Could not be parsed as Python: the content is binary",
         "Binary data: 900 B", "00 01 62 69"),
    # JSON scalars and empty containers
    says("json-scalar", "n.json", " 42 ", "", "top level: number, e.g. 42"),
    says("json-empty-array", "a.json", "[]", "", "top level: array[0]"),
    says("json-empty-object", "o.json", "{}", "", "top level: object (0 keys)"),
    # JSON Lines
    says("jsonl-records-counted-fields-merged", "events.jsonl", JSON_LINES + "\n",
         "JSON Lines: 1,500 records", "  note?: string"),
    says("jsonl-invalid-lines-reported", "mixed.ndjson", '{"a": 1}\nnot json\n\n{"a": 2}\n',
         "", "JSON Lines: 3 records", "1 of the first 3 lines are not valid JSON"),
    says("jsonl-no-valid-line-fallback", "bad.jsonl", "nope\nstill nope\n",
         "Could not be parsed as JSON Lines: no line is valid JSON"),
    # YAML
    says("yaml-top-level-keys-nested-types", "compose.yaml", YAML,
         "YAML document, top level: object (4 keys)", "  services: object (2 keys)",
         "      ports: array[2] of number", "  steps: array[2] of string"),
    says("yaml-several-documents-counted", "multi.yml", "a: 1\n---\nb: 2\n---\nc: 3\n",
         "YAML 3 documents (the first is described)"),
    says("yaml-malformed-fallback", "bad.yaml", "x: [1, 2\ny: : :\n",
         "Could not be parsed as YAML: ", "1| x: [1, 2"),
    # TOML
    says("toml-tables-keys-arrays-of-tables", "config.toml", TOML,
         "TOML document: 5 top-level entries", 'Top-level keys: title = "Example"',
         '[owner] name = "Tom", dob = 1979-05-27 07:32:00-08:00',
         "[database] ports = array[2], enabled = true", '[servers.alpha] ip = "10.0.0.1"',
         "[[products]] 2 entries; keys: name, sku, color"),
    says("toml-malformed-fallback", "bad.toml", "[table\nkey = \n",
         "Could not be parsed as TOML: "),
    # Markdown
    says("markdown-heading-tree-skips-front-matter-and-code", "guide.md", MARKDOWN, "",
         "4 headings, 1 code block", "  # Guide  (line 4)", "    ## Install  (line 8)",
         "    ## Usage  (line 15)", "      ### Details  (line 18)", lacks=("not a heading",)),
    # CSV and TSV
    says("csv-columns-types-quoted-newlines", "items.csv", CSV,
         "CSV: 5 columns, 3 data rows (plus a header row); delimiter ','",
         "  1. id: integer, e.g. 1", "  2. name: text, e.g. 'Smith, J'",
         "  3. price: decimal, 1 empty, e.g. 2.5", "  4. when: date", "  5. ok: boolean"),
    says("csv-semicolon-no-trailing-newline", "eu.csv", "a;b\n1;2\n3;4", "",
         "2 columns, 2 data rows", "delimiter ';'"),
    says("csv-headerless", "raw.csv", "1,2\n3,4\n5,6\n", "",
         "3 data rows (no header row detected)", "1. column 1: integer"),
    says("tsv-ragged-rows", "t.tsv", "name\tage\nann\t3\nbob\t4\textra\n",
         "TSV: 3 columns, 2 data rows", "delimiter 'tab'", "Row widths vary"),
    says("csv-empty-fallback", "empty.csv", "\n\n",
         "Could not be parsed as CSV: the file is empty"),
    # TypeScript and JavaScript
    says("typescript-imports-exports-classes-functions", "app.tsx", TYPESCRIPT,
         "TypeScript module: 31 lines",
         "Imports (5): react, ./types, ../lib/pair, fs, ./reexport",
         "default class App", "function helper",
         "  class App extends React.Component  (line 15)",
         "    methods: constructor(), load(), create()",
         "  function helper(a: string, b: number): string  (line 26)",
         "  const add = (x: number, y: number) =>  (line 29)",
         "Types (3): interface User, type Id, enum Color", lacks=("Fake",)),
    says("javascript-same-outline", "app.js", TYPESCRIPT, "JavaScript module: 31 lines"),
    # SQL
    says("sql-tables-columns-objects-inserts", "schema.sql", SQL, "", "2 CREATE TABLE",
         "  users: 3 columns: id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, "
         "nickname TEXT DEFAULT '--none--'; CONSTRAINT users_email_check",
         "  orders: 3 columns: id SERIAL, user_id INT REFERENCES users(id)",
         "Indexes (1): idx_orders_user", "Views (1): big_orders",
         "INSERT statements: users (2), orders (1)"),
    says("sql-unterminated-create-table-still-named", "cut.sql", "CREATE TABLE t (\n  a INT,\n",
         "", "  t: (column list not parsed)"),
    # SQLite
    says("sqlite-corrupt-binary-fallback", "broken.db",
         b"SQLite format 3\x00" + b"\xff" * 2000,
         "Could not be parsed as a SQLite database: ", "Binary data"),
    # the fallback explorer
    says("fallback-line-count-first-five-lines", "app.log",
         "\n".join(f"entry {i}" for i in range(1, 101)), "100 lines", "  5| entry 5",
         lacks=("entry 6",)),
    says("fallback-binary-size-first-bytes", "image.png",
         b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "", "Binary data: 108 B", "89 50 4e 47"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "starts", "contains", "lacks"), SUMMARIES)
def test_the_summary_says(
    tmp_path: Path,
    name: str,
    content: str | bytes,
    starts: str,
    contains: tuple[str, ...],
    lacks: tuple[str, ...],
) -> None:
    text = summary(write(tmp_path, name, content))
    assert text.startswith(starts), text
    assert [part for part in contains if part not in text] == []
    assert [part for part in lacks if part in text] == []


# -- explorers on well-formed files ------------------------------------------------


class TestPython:
    def test_classes_methods_functions_and_imports(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "inventory.py", PYTHON))
        assert text.startswith("Python module: 40 lines")
        assert "Docstring: Inventory service: stock levels and reorders." in text
        assert "Imports (5): __future__, os, collections, .models, json" in text
        assert "__all__ (2): Inventory, reorder" in text
        assert "Constants: MAX_STOCK" in text
        assert "class Inventory(Base, metaclass=Meta)  (line 14)" in text
        assert "    class Error  (line 17)" in text
        assert "    def __init__(self, items: list[Item]) -> None" in text
        assert "    @property def total(self) -> int" in text
        assert "    async def refresh(self, *, force: bool=False) -> None" in text
        assert "  def reorder(item: Item, quantity: int=1) -> bool  (line 31)" in text
        assert "  async def sync_all() -> None  (line 35)" in text
        assert '__name__ == "__main__"' in text


class TestJson:
    def test_keys_types_lengths_and_element_fields(self, tmp_path: Path) -> None:
        doc = {
            "name": "demo",
            "items": [
                {"id": i, "tags": ["a"] * (i % 3), **({"extra": True} if i % 2 else {})}
                for i in range(50)
            ],
            "meta": {"count": 50, "nested": {"deep": None}},
        }
        text = summary(write(tmp_path, "doc.json", json.dumps(doc)))
        assert text.startswith("JSON document, top level: object (3 keys)")
        assert '  name: string, e.g. "demo"' in text
        assert "  items: array[50] of object" in text
        assert "    tags: array[0..2] of string" in text
        assert "    extra?: boolean, e.g. true" in text
        assert "  meta: object (2 keys)" in text and "      deep: null" in text

    def test_a_top_level_array_larger_than_a_window_is_streamed(self, tmp_path: Path) -> None:
        records = [{"id": i, "name": f"user {i}", "score": i / 3} for i in range(60_000)]
        path = write(tmp_path, "records.json", json.dumps(records, indent=1))
        assert path.stat().st_size > 3 * 1024 * 1024
        text = summary(path)
        assert "top level: array[60,000] of object" in text
        assert "  score: number" in text

    def test_a_scan_past_the_budget_stops_and_says_counts_are_lower_bounds(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(data, "JSON_SCAN_BYTES", 1024 * 1024)
        doc = {"meta": {"v": 1}, "rows": [[i, "x" * 20] for i in range(200_000)]}
        text = summary(write(tmp_path, "big.json", json.dumps(doc)))
        assert "Note: scan stopped after the first 1.0 MB" in text
        assert "  rows: array[≥" in text and "of array" in text

    @pytest.mark.parametrize(
        "content", ['{"a": 1, "b": [1, 2,]}', '{"a": 1', "{'single': 'quotes'}"]
    )
    def test_malformed_json_gives_the_parsers_reason_and_where_it_stopped(
        self, tmp_path: Path, content: str
    ) -> None:
        # The wording is the json module's own, which changes between Python versions
        # (3.13 names a trailing comma where 3.11 expects a value): ask it.
        with pytest.raises(json.JSONDecodeError) as parsed:
            json.loads(content)
        reason = f"{parsed.value.msg} near byte {parsed.value.pos}"  # ASCII: chars are bytes
        text = summary(write(tmp_path, "bad.json", content))
        assert text.splitlines()[0] == f"Could not be parsed as JSON: {reason}"
        assert "lines" in text

    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            ("", "it is empty"),
            ('{"a": 1}\n{"a": 2}\n', "extra data after the first top-level value"),
            ("[" * 100_000, "nested too deeply"),
        ],
    )
    def test_malformed_json_gives_the_reason_and_the_fallback(
        self, tmp_path: Path, content: str, reason: str
    ) -> None:
        text = summary(write(tmp_path, "bad.json", content))
        assert text.startswith("Could not be parsed as JSON: ")
        assert reason in text.splitlines()[0]
        assert "lines" in text


# -- a file above its explorer's parse limit is outlined from a line scan -----------


@pytest.mark.parametrize(
    ("explorer", "name", "content", "contains", "lacks"),
    [
        pytest.param(code, "big.py", PYTHON,
                     ("outline from a line scan",
                      "class Inventory(Base, metaclass=Meta)  (line 14)",
                      "def reorder(item: Item, quantity: int = 1)"),
                     # the regex stops at ')'
                     ("class Inventory(Base, metaclass=Meta):",), id="python"),
        pytest.param(data, "big.yaml", YAML,
                     ("top-level keys from a line scan", "  name: demo",
                      "  services: (nested)"),
                     ("image",), id="yaml-top-level-keys"),
        pytest.param(data, "big.toml", TOML,
                     ("tables from a line scan", "  [servers.alpha]", "  [[products]]"),
                     (), id="toml-table-headers"),
    ],
)  # fmt: skip
def test_a_file_above_the_parse_limit_is_outlined_from_a_line_scan(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    explorer: ModuleType,
    name: str,
    content: str,
    contains: tuple[str, ...],
    lacks: tuple[str, ...],
) -> None:
    monkeypatch.setattr(explorer, "PARSE_LIMIT_BYTES", 10)
    text = summary(write(tmp_path, name, content))
    assert [part for part in contains if part not in text] == []
    assert [part for part in lacks if part in text] == []


class TestSqlite:
    def test_tables_columns_row_counts_views_and_indexes(self, tmp_path: Path) -> None:
        path = make_sqlite(tmp_path / "shop.sqlite")
        before = path.read_bytes()
        text = summary(path)
        assert text.startswith("SQLite database: 2 tables, 1 view, 1 index")
        assert "  users (120 rows): id INTEGER PK, name TEXT NOT NULL, age INT" in text
        assert '  odd "name" (0 rows): x ANY' in text
        assert "Views: adults" in text and "Indexes: users_name (on users)" in text
        assert path.read_bytes() == before


class TestExplorersNeverRaise:
    @pytest.mark.parametrize("file_type", sorted(EXPLORERS))
    @pytest.mark.parametrize(
        "content",
        [
            b"",
            b"\n\n\n",
            b"{[(\"'`",
            os.urandom(4096),
            b"\xff\xfe" + "utf-16 text".encode("utf-16-le"),
            b"a" * 200_000,  # one long line
        ],
        ids=["empty", "newlines", "brackets", "random", "utf16", "long-line"],
    )
    def test_any_content_gives_a_summary(
        self, tmp_path: Path, file_type: str, content: bytes
    ) -> None:
        path = write(tmp_path, "input", content)
        result = explore(path, file_type, is_binary=is_binary_data(content[:8192]))
        assert isinstance(result, str) and len(result) < 7_000

    def test_a_vanished_file_raises_os_error(self, tmp_path: Path) -> None:
        with pytest.raises(OSError):
            explore(tmp_path / "gone.json", "json")
