"""Configuration: documented defaults, validation errors that name the key, LCM_* variables."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from mnesis import (
    CompactionConfig,
    FileConfig,
    MnesisConfig,
    MnesisConfigError,
    OperatorConfig,
    SessionConfig,
    StoreConfig,
)


class TestDefaults:
    def test_compaction_defaults_match_the_api(self) -> None:
        c = CompactionConfig()
        assert c.auto is True
        assert c.compaction_output_budget == 20_000
        assert c.prune is True
        assert c.prune_protect_tokens == 40_000
        assert c.prune_minimum_tokens == 20_000
        assert c.compaction_model is None
        assert c.level2_enabled is True
        assert c.compaction_prompt is None
        assert c.soft_threshold_fraction == 0.6
        assert c.max_compaction_rounds == 10
        assert c.condensation_enabled is True

    def test_the_lcm_tuning_defaults_match_the_service_spec(self) -> None:
        config = MnesisConfig()
        assert config.compaction.fresh_tail_count == 8
        assert config.compaction.leaf_target_tokens == 600
        assert config.compaction.condensed_target_tokens == 900
        assert config.retrieval.max_expand_tokens == 4_000

    def test_file_store_operator_and_session_defaults_match_the_api(self) -> None:
        assert FileConfig().inline_threshold == 10_000
        store = StoreConfig()
        assert store.db_path.startswith(os.path.expanduser("~/.mnesis/"))
        assert store.wal_mode is True
        assert store.connection_timeout == 30.0
        assert store.database_url is None
        ops = OperatorConfig()
        assert (ops.llm_map_concurrency, ops.agentic_map_concurrency, ops.max_retries) == (
            16,
            4,
            3,
        )
        assert SessionConfig().doom_loop_threshold == 3

    def test_the_top_level_config_holds_every_section(self) -> None:
        config = MnesisConfig()
        assert isinstance(config.compaction, CompactionConfig)
        assert isinstance(config.file, FileConfig)
        assert isinstance(config.store, StoreConfig)
        assert isinstance(config.operators, OperatorConfig)
        assert isinstance(config.session, SessionConfig)
        assert config.model_overrides is None

    def test_model_overrides_accept_the_documented_keys(self) -> None:
        config = MnesisConfig(model_overrides={"context_limit": 32_000, "max_output_tokens": 0})
        assert config.model_overrides == {"context_limit": 32_000, "max_output_tokens": 0}


INVALID_VALUES: list[tuple[Callable[[], object], str, str]] = [
    (
        lambda: CompactionConfig(compaction_output_budget=-1),
        "compaction.compaction_output_budget",
        "-1",
    ),
    (
        lambda: CompactionConfig(soft_threshold_fraction=1.5),
        "compaction.soft_threshold_fraction",
        "1.5",
    ),
    (lambda: CompactionConfig(max_compaction_rounds=0), "compaction.max_compaction_rounds", "0"),
    (lambda: FileConfig(inline_threshold=0), "file.inline_threshold", "0"),
    (lambda: StoreConfig(connection_timeout=0), "store.connection_timeout", "0"),
    (lambda: StoreConfig(db_path="   "), "store.db_path", "'   '"),
    (lambda: OperatorConfig(llm_map_concurrency=0), "operators.llm_map_concurrency", "0"),
    (lambda: SessionConfig(doom_loop_threshold=1), "session.doom_loop_threshold", "1"),
    (
        lambda: MnesisConfig(compaction={"prune_protect_tokens": -5}),
        "compaction.prune_protect_tokens",
        "-5",
    ),
    (
        lambda: MnesisConfig(model_overrides={"context_window": 5}),
        "model_overrides",
        "context_window",
    ),
    (
        lambda: MnesisConfig(model_overrides={"context_limit": 0}),
        "model_overrides",
        "context_limit",
    ),
]


class TestValidation:
    @pytest.mark.parametrize(
        ("build", "key", "value"), [pytest.param(*case, id=case[1]) for case in INVALID_VALUES]
    )
    def test_an_invalid_value_names_the_dotted_key_and_the_value(
        self, build: Callable[[], object], key: str, value: str
    ) -> None:
        with pytest.raises(MnesisConfigError) as info:
            build()
        assert info.value.key == key
        assert key in str(info.value)
        assert value in str(info.value)

    def test_a_config_error_is_also_a_value_error(self) -> None:
        with pytest.raises(ValueError):
            CompactionConfig(prune_minimum_tokens=-1)

    def test_an_unknown_key_is_rejected_by_name(self) -> None:
        with pytest.raises(MnesisConfigError, match=r"compaction\.prune_protect"):
            CompactionConfig(prune_protect=1)  # type: ignore[call-arg]

    def test_an_invalid_assignment_is_rejected_and_the_old_value_kept(self) -> None:
        config = MnesisConfig()
        with pytest.raises(MnesisConfigError, match=r"compaction\.fresh_tail_count.*-3"):
            config.compaction.fresh_tail_count = -3
        assert config.compaction.fresh_tail_count == 8


class TestFromEnvironment:
    def test_an_empty_environment_gives_the_defaults(self) -> None:
        assert MnesisConfig.from_env({}) == MnesisConfig()

    def test_every_lcm_variable_is_mapped(self) -> None:
        config = MnesisConfig.from_env(
            {
                "LCM_CONTEXT_THRESHOLD": "0.75",
                "LCM_FRESH_TAIL_COUNT": "12",
                "LCM_LEAF_TARGET_TOKENS": "700",
                "LCM_CONDENSED_TARGET_TOKENS": "1100",
                "LCM_MAX_EXPAND_TOKENS": "5000",
                "LCM_DATABASE_URL": "postgresql://lcm@db/lcm",
            }
        )
        assert config.compaction.soft_threshold_fraction == 0.75
        assert config.compaction.fresh_tail_count == 12
        assert config.compaction.leaf_target_tokens == 700
        assert config.compaction.condensed_target_tokens == 1100
        assert config.retrieval.max_expand_tokens == 5000
        assert config.store.database_url == "postgresql://lcm@db/lcm"

    @pytest.mark.parametrize("raw", ["false", "0", "no", "OFF"])
    def test_lcm_enabled_false_turns_off_automatic_compaction_and_pruning(self, raw: str) -> None:
        config = MnesisConfig.from_env({"LCM_ENABLED": raw})
        assert (config.compaction.auto, config.compaction.prune) == (False, False)

    @pytest.mark.parametrize("raw", ["true", "1", "yes", "On"])
    def test_lcm_enabled_true_keeps_the_defaults(self, raw: str) -> None:
        config = MnesisConfig.from_env({"LCM_ENABLED": raw})
        assert (config.compaction.auto, config.compaction.prune) == (True, True)

    def test_lcm_autocompact_disabled_turns_off_only_automatic_compaction(self) -> None:
        config = MnesisConfig.from_env({"LCM_AUTOCOMPACT_DISABLED": "1"})
        assert (config.compaction.auto, config.compaction.prune) == (False, True)
        assert MnesisConfig.from_env({"LCM_AUTOCOMPACT_DISABLED": "0"}).compaction.auto is True

    @pytest.mark.parametrize(
        ("url", "path"),
        [("sqlite:////var/lib/lcm.db", "/var/lib/lcm.db"), ("/data/lcm.db", "/data/lcm.db")],
    )
    def test_a_sqlite_database_url_sets_the_file_path(self, url: str, path: str) -> None:
        config = MnesisConfig.from_env({"LCM_DATABASE_URL": url})
        assert config.store.db_path == path
        assert config.store.database_url is None

    def test_the_process_environment_is_read_by_default(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("LCM_FRESH_TAIL_COUNT", "3")
        assert MnesisConfig.from_env().compaction.fresh_tail_count == 3

    def test_empty_variables_are_ignored(self) -> None:
        assert MnesisConfig.from_env({"LCM_FRESH_TAIL_COUNT": ""}) == MnesisConfig()

    @pytest.mark.parametrize(
        ("var", "raw"),
        [
            ("LCM_ENABLED", "maybe"),
            ("LCM_AUTOCOMPACT_DISABLED", "2"),
            ("LCM_FRESH_TAIL_COUNT", "eight"),
            ("LCM_LEAF_TARGET_TOKENS", "6.5"),
            ("LCM_CONDENSED_TARGET_TOKENS", "lots"),
            ("LCM_MAX_EXPAND_TOKENS", "4k"),
            ("LCM_CONTEXT_THRESHOLD", "high"),
        ],
    )
    def test_an_unparsable_variable_is_named_with_its_value(self, var: str, raw: str) -> None:
        with pytest.raises(MnesisConfigError) as info:
            MnesisConfig.from_env({var: raw})
        assert var in str(info.value) and raw in str(info.value)

    @pytest.mark.parametrize(
        ("var", "raw"),
        [
            ("LCM_CONTEXT_THRESHOLD", "1.5"),
            ("LCM_FRESH_TAIL_COUNT", "-1"),
            ("LCM_LEAF_TARGET_TOKENS", "10"),
            ("LCM_MAX_EXPAND_TOKENS", "0"),
        ],
    )
    def test_an_out_of_range_variable_is_named_with_its_value(self, var: str, raw: str) -> None:
        with pytest.raises(MnesisConfigError) as info:
            MnesisConfig.from_env({var: raw})
        assert var in str(info.value) and raw in str(info.value)
