"""Identifiers: prefixed, well-formed, and sortable in creation order."""

from __future__ import annotations

import threading
import time

import pytest

from mnesis.errors import InvalidArgumentError
from mnesis.models import ids as ids_module
from mnesis.models.ids import ID_PREFIXES, is_valid_id, new_id, seeded_ids
from mnesis.tokens.estimator import TokenEstimator

PREFIXES = ["sess", "msg", "part", "sum", "file", "run"]


class TestFormat:
    @pytest.mark.parametrize("prefix", PREFIXES)
    def test_an_id_is_its_prefix_and_26_crockford_characters(self, prefix: str) -> None:
        value = new_id(prefix)
        head, _, body = value.partition("_")
        assert head == prefix
        assert len(body) == 26
        assert set(body) <= set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        assert is_valid_id(value) and is_valid_id(value, prefix)

    def test_the_documented_prefixes_are_all_known(self) -> None:
        assert set(PREFIXES) <= set(ID_PREFIXES)

    def test_an_unknown_prefix_is_rejected(self) -> None:
        with pytest.raises(ValueError):
            new_id("bogus")


class TestOrdering:
    def test_ids_made_in_a_tight_loop_sort_in_creation_order_and_never_repeat(self) -> None:
        ids = [new_id("msg") for _ in range(20_000)]
        assert ids == sorted(ids)
        assert len(set(ids)) == len(ids)

    def test_ids_of_different_kinds_share_one_clock(self) -> None:
        made = [new_id(PREFIXES[i % len(PREFIXES)]) for i in range(3_000)]
        bodies = [value.partition("_")[2] for value in made]
        assert bodies == sorted(bodies)

    def test_ids_made_on_many_threads_are_unique(self) -> None:
        out: list[list[str]] = [[] for _ in range(8)]

        def work(slot: list[str]) -> None:
            slot.extend(new_id("part") for _ in range(2_000))

        threads = [threading.Thread(target=work, args=(slot,)) for slot in out]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every = [value for slot in out for value in slot]
        assert len(set(every)) == len(every)
        assert all(slot == sorted(slot) for slot in out)

    def test_an_id_spells_its_clock_and_counter_across_every_carry(self) -> None:
        """The cached leading characters never go stale: each ID is exactly the
        128-bit value (clock << 80 | counter) it stands for, also where the counter
        carries into the cached characters or wraps to zero."""
        decode = {char: index for index, char in enumerate("0123456789ABCDEFGHJKMNPQRSTVWXYZ")}

        def value(made: str) -> int:
            number = 0
            for char in made.partition("_")[2]:
                number = number * 32 + decode[char]
            return number

        clock = time.time_ns() // 1_000_000 + 2_000  # ahead of the wall clock: one ms
        for start in ((1 << 20) - 2, (1 << 30) - 2, (1 << 79) - 2, (1 << 80) - 2):
            with ids_module._lock:
                ids_module._last_ms = clock
                ids_module._last_rand = start
            made = [new_id("part") for _ in range(4)]
            expected = [(clock << 80) | ((start + 1 + i) & ((1 << 80) - 1)) for i in range(4)]
            assert [value(one) for one in made] == expected


class TestValidation:
    @pytest.mark.parametrize(
        "value",
        [
            "msg_01ARZ3NDEKTSV4RRFFQ69G5FA",  # 25 characters
            "msg_01ARZ3NDEKTSV4RRFFQ69G5FAVX",  # 27 characters
            "msg_01arz3ndektsv4rrffq69g5fav",  # lower case
            "msg_01ARZ3NDEKTSV4RRFFQ69G5FAI",  # I is not Crockford base32
            "msg_01ARZ3NDEKTSV4RRFFQ69G5FAU",  # neither is U
            "bogus_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "msg-01ARZ3NDEKTSV4RRFFQ69G5FAV",
            " msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "msg_01ARZ3NDEKTSV4RRFFQ69G5FAV\n",
            "",
            None,
            42,
            b"msg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
        ],
    )
    def test_malformed_values_are_not_ids(self, value: object) -> None:
        assert is_valid_id(value) is False

    def test_an_id_checked_against_another_prefix_is_not_valid(self) -> None:
        assert is_valid_id(new_id("msg"), "sess") is False
        assert is_valid_id(new_id("sess"), "sess") is True


def _seeded(seed: int, era: int, count: int = 200) -> list[str]:
    with seeded_ids(seed, era=era):
        return [new_id("msg") for _ in range(count)]


class TestSeeded:
    def test_one_seed_and_era_give_the_same_ids(self) -> None:
        assert _seeded(7, 3) == _seeded(7, 3)
        assert all(is_valid_id(value, "msg") for value in _seeded(7, 300))

    def test_eras_never_share_an_id(self) -> None:
        seen: set[str] = set()
        for era in (*range(0, 260, 7), 256, 512):
            ids = _seeded(7, era, 50)
            assert seen.isdisjoint(ids)
            seen.update(ids)

    def test_the_first_eighty_eras_differ_in_digits_alone(self) -> None:
        estimator = TokenEstimator()
        first = _seeded(7, 0)
        for era in (1, 9, 79):
            other = _seeded(7, era)
            assert [a[6:] for a in first] == [b[6:] for b in other]
            assert all(b[4:6].isdigit() for b in other)
            assert [estimator.estimate(f"see {a}.") for a in first] == [
                estimator.estimate(f"see {b}.") for b in other
            ]

    @pytest.mark.parametrize("era", [-1, True, 1.5, "2"])
    def test_a_bad_era_is_rejected(self, era: object) -> None:
        with pytest.raises(InvalidArgumentError), seeded_ids(1, era=era):  # type: ignore[arg-type]
            pass
