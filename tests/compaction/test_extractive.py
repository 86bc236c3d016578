"""The offline extractive summariser: what it treats as a constraint, and in what order."""

from __future__ import annotations

from mnesis import MessageWithParts, TextPart, TokenEstimator
from mnesis.compaction.extractive import extract_facts, extractive_condense, fit_sections
from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.models.message import Message, Role

CONSTRAINTS = LEVEL1_SECTIONS[1]
ESTIMATOR = TokenEstimator(exact=False)


def _message(role: Role, text: str, index: int) -> MessageWithParts:
    message = Message(id=f"m{index}", session_id="s", role=role, created_at=index)
    return MessageWithParts(message=message, parts=[TextPart(text=text)])


class TestConstraints:
    def test_standing_rules_stated_with_keep_always_avoid_are_constraints(self) -> None:
        facts = extract_facts(
            [
                _message("user", "Keep the sync LegacyLedgerClient importable until v2.4.0.", 0),
                _message("user", "Avoid touching the vendored code in third_party/.", 1),
                _message("user", "Keep going.", 2),
                _message("user", "Run the tests for the billing module now.", 3),
            ]
        )
        assert facts[CONSTRAINTS] == [
            "Keep the sync LegacyLedgerClient importable until v2.4.0.",
            "Avoid touching the vendored code in third_party/.",
        ]

    def test_decisions_are_kept_with_the_constraints_after_the_users_own(self) -> None:
        facts = extract_facts(
            [
                _message("assistant", "We decided to use argon2id instead of bcrypt.", 0),
                _message("user", "Never modify anything under migrations/.", 1),
            ]
        )
        text = fit_sections(facts, target_tokens=600, estimator=ESTIMATOR)
        rule = text.index("Never modify anything under migrations/")
        decision = text.index("Decision: We decided to use argon2id")
        assert rule < decision

    def test_a_merge_keeps_every_childs_constraints_before_other_sections_fill_up(self) -> None:
        children = [
            "## Goal\n- migrate payments\n"
            "## Key Instructions & Constraints\n- Never touch migrations/\n"
            "## Completed Work\n"
            + "\n".join(f"- step {i} done with a long description" for i in range(40)),
            "## Key Instructions & Constraints\n- The API must listen on port 8443\n"
            "## Completed Work\n" + "\n".join(f"- later step {i} done too" for i in range(40)),
        ]
        merged = extractive_condense(children, target_tokens=200, estimator=ESTIMATOR)
        assert "Never touch migrations/" in merged
        assert "The API must listen on port 8443" in merged
        assert ESTIMATOR.estimate(merged) <= 200
