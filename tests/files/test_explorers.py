"""Type detection and every explorer, on real files of each type and on malformed ones."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from mnesis.files import EXPLORERS, detect_file_type, explore
from mnesis.files.detect import is_binary_data
from mnesis.files.explorers import data

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

    def test_a_syntax_error_gives_the_fallback(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "broken.py", "def f(:\n    pass\n"))
        assert text.startswith("Could not be parsed as Python: syntax error at line 1")
        assert "2 lines" in text and "1| def f(:" in text

    def test_binary_data_named_py_says_so_and_shows_bytes(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "evil.py", b"\x00\x01binary\xff" * 100))
        assert text.startswith("Could not be parsed as Python: the content is binary")
        assert "Binary data: 900 B" in text and "00 01 62 69" in text

    def test_a_module_above_the_parse_limit_is_outlined_from_a_line_scan(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from mnesis.files.explorers import code

        monkeypatch.setattr(code, "PARSE_LIMIT_BYTES", 100)
        text = summary(write(tmp_path, "big.py", PYTHON))
        assert "outline from a line scan" in text
        assert "class Inventory(Base, metaclass=Meta):" not in text  # the regex stops at ')'
        assert "class Inventory(Base, metaclass=Meta)  (line 14)" in text
        assert "def reorder(item: Item, quantity: int = 1)" in text


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

    def test_scalars_and_empty_containers(self, tmp_path: Path) -> None:
        assert "top level: number, e.g. 42" in summary(write(tmp_path, "n.json", " 42 "))
        assert "top level: array[0]" in summary(write(tmp_path, "a.json", "[]"))
        assert "top level: object (0 keys)" in summary(write(tmp_path, "o.json", "{}"))


class TestJsonLines:
    def test_records_are_counted_and_their_fields_merged(self, tmp_path: Path) -> None:
        lines = [json.dumps({"id": i, **({"note": "x"} if i % 2 else {})}) for i in range(1_500)]
        text = summary(write(tmp_path, "events.jsonl", "\n".join(lines) + "\n"))
        assert text.startswith("JSON Lines: 1,500 records")
        assert "  note?: string" in text

    def test_invalid_lines_are_reported(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "mixed.ndjson", '{"a": 1}\nnot json\n\n{"a": 2}\n'))
        assert "JSON Lines: 3 records" in text
        assert "1 of the first 3 lines are not valid JSON" in text

    def test_no_valid_line_gives_the_fallback(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "bad.jsonl", "nope\nstill nope\n"))
        assert text.startswith("Could not be parsed as JSON Lines: no line is valid JSON")


class TestYaml:
    def test_top_level_keys_and_nested_types(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "compose.yaml", YAML))
        assert text.startswith("YAML document, top level: object (4 keys)")
        assert "  services: object (2 keys)" in text
        assert "      ports: array[2] of number" in text
        assert "  steps: array[2] of string" in text

    def test_several_documents_are_counted(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "multi.yml", "a: 1\n---\nb: 2\n---\nc: 3\n"))
        assert text.startswith("YAML 3 documents (the first is described)")

    def test_malformed_yaml_gives_the_fallback(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "bad.yaml", "x: [1, 2\ny: : :\n"))
        assert text.startswith("Could not be parsed as YAML: ")
        assert "1| x: [1, 2" in text

    def test_a_large_file_falls_back_to_a_line_scan_of_top_level_keys(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(data, "PARSE_LIMIT_BYTES", 10)
        text = summary(write(tmp_path, "big.yaml", YAML))
        assert "top-level keys from a line scan" in text
        assert "  name: demo" in text and "  services: (nested)" in text
        assert "image" not in text


class TestToml:
    def test_tables_keys_and_arrays_of_tables(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "config.toml", TOML))
        assert text.startswith("TOML document: 5 top-level entries")
        assert 'Top-level keys: title = "Example"' in text
        assert '[owner] name = "Tom", dob = 1979-05-27 07:32:00-08:00' in text
        assert "[database] ports = array[2], enabled = true" in text
        assert '[servers.alpha] ip = "10.0.0.1"' in text
        assert "[[products]] 2 entries; keys: name, sku, color" in text

    def test_malformed_toml_gives_the_fallback(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "bad.toml", "[table\nkey = \n"))
        assert text.startswith("Could not be parsed as TOML: ")

    def test_a_large_file_lists_its_table_headers(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(data, "PARSE_LIMIT_BYTES", 10)
        text = summary(write(tmp_path, "big.toml", TOML))
        assert "tables from a line scan" in text
        assert "  [servers.alpha]" in text and "  [[products]]" in text


class TestMarkdown:
    def test_the_heading_tree_skips_front_matter_and_code(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "guide.md", MARKDOWN))
        assert "4 headings, 1 code block" in text
        assert "  # Guide  (line 4)" in text
        assert "    ## Install  (line 8)" in text
        assert "    ## Usage  (line 15)" in text
        assert "      ### Details  (line 18)" in text
        assert "not a heading" not in text


class TestCsv:
    def test_columns_types_and_rows_with_quoted_newlines(self, tmp_path: Path) -> None:
        content = (
            "id,name,price,when,ok\n"
            '1,"Smith, J",2.5,2024-01-01,true\n'
            '2,"two\nlines",3,2024-01-02,false\n'
            "3,Bob,,2024-01-03,true\n"
        )
        text = summary(write(tmp_path, "items.csv", content))
        assert text.startswith("CSV: 5 columns, 3 data rows (plus a header row); delimiter ','")
        assert "  1. id: integer, e.g. 1" in text
        assert "  2. name: text, e.g. 'Smith, J'" in text
        assert "  3. price: decimal, 1 empty, e.g. 2.5" in text
        assert "  4. when: date" in text and "  5. ok: boolean" in text

    def test_a_semicolon_delimiter_and_no_trailing_newline(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "eu.csv", "a;b\n1;2\n3;4"))
        assert "2 columns, 2 data rows" in text and "delimiter ';'" in text

    def test_a_headerless_file(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "raw.csv", "1,2\n3,4\n5,6\n"))
        assert "3 data rows (no header row detected)" in text and "1. column 1: integer" in text

    def test_tsv_and_ragged_rows(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "t.tsv", "name\tage\nann\t3\nbob\t4\textra\n"))
        assert text.startswith("TSV: 3 columns, 2 data rows") and "delimiter 'tab'" in text
        assert "Row widths vary" in text

    def test_an_empty_csv_gives_the_fallback(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "empty.csv", "\n\n"))
        assert text.startswith("Could not be parsed as CSV: the file is empty")


class TestTypeScriptAndJavaScript:
    def test_imports_exports_classes_and_functions(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "app.tsx", TYPESCRIPT))
        assert text.startswith("TypeScript module: 31 lines")
        assert "Imports (5): react, ./types, ../lib/pair, fs, ./reexport" in text
        assert "default class App" in text and "function helper" in text
        assert "  class App extends React.Component  (line 15)" in text
        assert "    methods: constructor(), load(), create()" in text
        assert "  function helper(a: string, b: number): string  (line 26)" in text
        assert "  const add = (x: number, y: number) =>  (line 29)" in text
        assert "Types (3): interface User, type Id, enum Color" in text
        assert "Fake" not in text

    def test_javascript_uses_the_same_outline(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "app.js", TYPESCRIPT))
        assert text.startswith("JavaScript module: 31 lines")


class TestSql:
    def test_tables_with_columns_other_objects_and_inserts(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "schema.sql", SQL))
        assert "2 CREATE TABLE" in text
        assert (
            "  users: 3 columns: id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, "
            "nickname TEXT DEFAULT '--none--'; CONSTRAINT users_email_check" in text
        )
        assert "  orders: 3 columns: id SERIAL, user_id INT REFERENCES users(id)" in text
        assert "Indexes (1): idx_orders_user" in text and "Views (1): big_orders" in text
        assert "INSERT statements: users (2), orders (1)" in text

    def test_an_unterminated_create_table_is_still_named(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "cut.sql", "CREATE TABLE t (\n  a INT,\n"))
        assert "  t: (column list not parsed)" in text


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

    def test_a_corrupt_database_gives_the_binary_fallback(self, tmp_path: Path) -> None:
        path = write(tmp_path, "broken.db", b"SQLite format 3\x00" + b"\xff" * 2000)
        text = summary(path)
        assert text.startswith("Could not be parsed as a SQLite database: ")
        assert "Binary data" in text


class TestFallback:
    def test_line_count_and_the_first_five_lines(self, tmp_path: Path) -> None:
        lines = [f"entry {i}" for i in range(1, 101)]
        text = summary(write(tmp_path, "app.log", "\n".join(lines)))
        assert text.startswith("100 lines")
        assert "  5| entry 5" in text and "entry 6" not in text

    def test_binary_data_shows_its_size_and_first_bytes(self, tmp_path: Path) -> None:
        text = summary(write(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100))
        assert "Binary data: 108 B" in text and "89 50 4e 47" in text


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
