"""The one way to open a store: the path or URL picks the backend, and anything that is
neither a path nor a supported URL is a configuration error before anything is written."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from mnesis.config import MnesisConfig, StoreConfig
from mnesis.errors import MissingDependencyError, MnesisConfigError, MnesisError
from mnesis.store import ImmutableStore, StorePool
from mnesis.store.factory import parse_location, resolve_location


class TestParsing:
    @pytest.mark.parametrize(
        ("value", "backend", "target"),
        [
            ("postgresql://lcm@db/lcm", "postgres", "postgresql://lcm@db/lcm"),
            ("postgres://lcm@db/lcm", "postgres", "postgres://lcm@db/lcm"),
            ("POSTGRESQL://lcm@db/lcm?sslmode=require", "postgres", None),
            ("/var/lib/lcm.db", "sqlite", "/var/lib/lcm.db"),
            ("relative/lcm.db", "sqlite", "relative/lcm.db"),
            ("./notes:v2.db", "sqlite", "./notes:v2.db"),
            ("C:\\data\\lcm.db", "sqlite", "C:\\data\\lcm.db"),
            (":memory:", "sqlite", ":memory:"),
            ("sqlite:///relative.db", "sqlite", "relative.db"),
            ("sqlite:////var/lib/lcm.db", "sqlite", "/var/lib/lcm.db"),
            ("sqlite:///:memory:", "sqlite", ":memory:"),
        ],
    )
    def test_a_path_or_supported_url_names_its_backend(
        self, value: str, backend: str, target: str | None
    ) -> None:
        location = parse_location(value)
        assert location.backend == backend
        assert location.target == (value if target is None else target)

    @pytest.mark.parametrize(
        "value",
        [
            "mysql://root@db/lcm",
            "http://example.com/lcm.db",
            "sqlite:/x.db",
            "sqlite://x.db",
            "sqlite:///",
            "postgresql:/db/lcm",
            "postgres:lcm",
            "file:///tmp/lcm.db",
            "notes:v2.db",
            "",
            "   ",
            "a\x00b",
        ],
    )
    def test_anything_else_is_a_config_error_in_the_mnesis_tree(self, value: str) -> None:
        with pytest.raises(MnesisConfigError) as info:
            parse_location(value, key="store.database_url")
        assert isinstance(info.value, MnesisError)
        assert info.value.key == "store.database_url"

    def test_the_pool_key_of_a_server_ignores_the_scheme_spelling(self) -> None:
        a = parse_location("postgres://lcm@db/lcm")
        b = parse_location("postgresql://lcm@db/lcm")
        assert a.key == b.key

    def test_the_pool_key_of_a_file_is_its_real_path(self, tmp_path: Path) -> None:
        direct = parse_location(str(tmp_path / "a.db"))
        through_dots = parse_location(str(tmp_path / "sub" / ".." / "a.db"))
        assert direct.key == through_dots.key == os.path.realpath(tmp_path / "a.db")

    def test_a_url_is_described_without_its_password(self) -> None:
        location = parse_location("postgresql://lcm:s3cret@db:5432/lcm")
        assert "s3cret" not in location.describe()
        assert location.describe() == "postgresql://lcm:***@db:5432/lcm"


class TestResolvingAConfig:
    def test_database_url_wins_over_db_path(self, tmp_path: Path) -> None:
        config = StoreConfig(db_path=str(tmp_path / "a.db"), database_url="postgresql://h/db")
        assert resolve_location(config).backend == "postgres"

    def test_an_explicit_db_path_wins_over_the_config(self, tmp_path: Path) -> None:
        config = StoreConfig(database_url="postgresql://h/db")
        location = resolve_location(config, str(tmp_path / "a.db"))
        assert (location.backend, location.target) == ("sqlite", str(tmp_path / "a.db"))

    @pytest.mark.parametrize("url", ["mysql://root@db/lcm", "sqlite:/typo.db", "http://x/y"])
    def test_lcm_database_url_with_an_unknown_scheme_is_refused_naming_the_variable(
        self, url: str
    ) -> None:
        with pytest.raises(MnesisConfigError) as info:
            MnesisConfig.from_env({"LCM_DATABASE_URL": url})
        assert info.value.key == "LCM_DATABASE_URL"
        assert "LCM_DATABASE_URL" in str(info.value)

    @pytest.mark.parametrize("url", ["postgresql://lcm@db/lcm", "postgres://h/db?sslmode=require"])
    def test_lcm_database_url_puts_a_server_url_into_database_url(self, url: str) -> None:
        config = MnesisConfig.from_env({"LCM_DATABASE_URL": url, "MNESIS_DB_PATH": "/x/y.db"})
        assert config.store.database_url == url
        location = resolve_location(config.store)
        assert (location.backend, location.target) == ("postgres", url)


class TestOpening:
    @pytest.mark.parametrize("value", ["mysql://root@db/lcm", "sqlite:/typo.db", "http://x/y"])
    async def test_a_bad_location_fails_before_anything_is_written(
        self, tmp_path: Path, value: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        pool = StorePool()
        with pytest.raises(MnesisConfigError):
            await pool.acquire(StoreConfig(database_url=value))
        with pytest.raises(MnesisConfigError):
            ImmutableStore(value)
        with pytest.raises(MnesisConfigError):
            await ImmutableStore.open(value, pool=pool)
        assert os.listdir(tmp_path) == []
        assert pool.open_count() == 0

    async def test_a_sqlite_url_opens_the_file_it_names(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        store = await ImmutableStore.open("sqlite:///via-url.db")
        try:
            assert store.location == str(tmp_path / "via-url.db")
        finally:
            await store.close()
        assert (tmp_path / "via-url.db").exists()

    async def test_a_postgresql_url_without_the_extra_names_what_to_install(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real = importlib.util.find_spec

        def without_psycopg(name: str, package: str | None = None) -> object:
            return None if name.startswith("psycopg") else real(name, package)

        monkeypatch.setattr(importlib.util, "find_spec", without_psycopg)
        pool = StorePool()
        with pytest.raises(MissingDependencyError, match=r"mnesis-lcm\[postgres\]"):
            await pool.acquire(StoreConfig(database_url="postgresql://localhost/x"))
        assert pool.open_count() == 0
