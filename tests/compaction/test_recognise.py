"""What the extractive summariser files where: paths, code, nods and goals."""

from __future__ import annotations

import pytest

from mnesis import MessageWithParts, TextPart, TokenEstimator
from mnesis.compaction.extractive import extract_facts, extractive_condense, fit_sections
from mnesis.compaction.prompts import LEVEL1_SECTIONS
from mnesis.compaction.recognise import is_ack, is_path, looks_like_code
from mnesis.models.message import Message, Role

GOAL, CONSTRAINTS, FINDINGS = LEVEL1_SECTIONS[0], LEVEL1_SECTIONS[1], LEVEL1_SECTIONS[2]
FILES, OTHER = LEVEL1_SECTIONS[6], LEVEL1_SECTIONS[7]
ESTIMATOR = TokenEstimator(exact=False)


def _message(role: Role, text: str, index: int) -> MessageWithParts:
    message = Message(id=f"m{index}", session_id="s", role=role, created_at=index)
    return MessageWithParts(message=message, parts=[TextPart(text=text)])


def _facts(*turns: tuple[Role, str]) -> dict[str, list[str]]:
    return extract_facts([_message(role, text, i) for i, (role, text) in enumerate(turns)])


@pytest.mark.parametrize(
    "text",
    [
        "payments/db/session.py",
        "migrations/",
        "/srv/acme/payments",
        "acme/payments",
        "pyproject.toml",
        ".venv/lib/python3.11/site-packages/x.py",
        "src/db",
        "~/notes.md",
    ],
)
def test_paths_are_paths(text: str) -> None:
    assert is_path(text)


@pytest.mark.parametrize(
    "text", ["req/s", "I/O", "HTTP/1.1", "Req/Sec", "Requests/sec", "and/or", "ms/op", "3.11.9"]
)
def test_units_and_protocols_are_not_paths(text: str) -> None:
    assert not is_path(text)


def test_code_and_diff_lines_are_not_prose() -> None:
    assert looks_like_code("- response = requests.post(url, json=body)")
    assert looks_like_code("+    async with httpx.AsyncClient() as client:")
    assert looks_like_code("<div class='x'>")
    assert not looks_like_code("Decided to keep pool_size=10; the database is not the bottleneck.")
    assert not looks_like_code("- Decided to use asyncio.sleep for the retry backoff.")


def test_nods_are_nods() -> None:
    assert is_ack("Looks good, carry on.") and is_ack("OK, next step.") and is_ack("Proceed.")
    assert not is_ack("Run the tests for it.")


class TestSections:
    def test_the_goal_is_the_standing_request_not_a_nod_or_a_question(self) -> None:
        facts = _facts(
            ("user", "Looks good, carry on."),
            ("user", "How does it hold up under load?"),
            (
                "user",
                "Let's migrate the payments service to async. Move the handlers to "
                "async FastAPI endpoints and run the tests after each module.",
            ),
        )
        assert facts[GOAL] == [
            "Let's migrate the payments service to async. Move the handlers to async FastAPI "
            "endpoints and run the tests after each module."
        ]

    def test_without_a_standing_request_the_goal_is_the_current_task(self) -> None:
        facts = _facts(("user", "Next: payments/services/fx.py."), ("user", "Proceed."))
        assert facts[GOAL] == ["Current task: payments/services/fx.py."]

    def test_relevant_files_hold_only_paths(self) -> None:
        facts = _facts(
            (
                "assistant",
                "Throughput is 1341 req/s over HTTP/1.1; the I/O wait is low. "
                "See payments/api/routes/webhooks.py and a/payments/db/session.py.",
            ),
        )
        assert facts[FILES] == ["payments/api/routes/webhooks.py", "payments/db/session.py"]

    def test_questions_and_echoes_are_not_decisions(self) -> None:
        facts = _facts(
            ("user", "Remind me which constraints we agreed on before you continue."),
            (
                "assistant",
                "[fake 1a2b3c4d] Noted: Remind me which constraints we agreed on "
                "before you continue.",
            ),
            ("assistant", "We decided to use argon2id instead of bcrypt."),
        )
        assert facts[CONSTRAINTS] == ["Decision: We decided to use argon2id instead of bcrypt."]

    def test_code_from_tool_output_does_not_leak_into_findings(self) -> None:
        facts = _facts(
            (
                "assistant",
                "- response = requests.post(url)  # error handling\n"
                "The failure is blockbuster.BlockingError.",
            ),
        )
        assert facts[FINDINGS] == ["The failure is blockbuster.BlockingError."]


class TestCondense:
    def test_merging_deduplicates_items_and_list_entries(self) -> None:
        a = fit_sections(
            {
                GOAL: ["Migrate the service to async and keep the REST contract intact always."],
                CONSTRAINTS: ["Never touch migrations/."],
                FILES: ["a.py", "b/c.py"],
            },
            target_tokens=400,
            estimator=ESTIMATOR,
        )
        b = fit_sections(
            {CONSTRAINTS: ["never touch   migrations/"], FILES: ["b/c.py", "d.py"]},
            target_tokens=400,
            estimator=ESTIMATOR,
        )
        merged = extractive_condense([a, b], target_tokens=400, estimator=ESTIMATOR)
        assert merged.count("igrations/") == 1
        files_line = merged.split(f"## {FILES}\n", 1)[1].splitlines()[0]
        assert files_line == "- b/c.py, d.py, a.py"
        assert "Migrate the service to async" in merged

    def test_a_merge_never_grows_past_its_target(self) -> None:
        body = fit_sections(
            {CONSTRAINTS: [f"Never change module number {i} without a review." for i in range(50)]},
            target_tokens=300,
            estimator=ESTIMATOR,
        )
        merged = extractive_condense([body] * 4, target_tokens=300, estimator=ESTIMATOR)
        assert ESTIMATOR.estimate(merged) <= 300
