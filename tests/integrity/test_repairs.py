"""Repairs: planned from a report, applied only on request, backed up, re-checked.

For every repairable kind a fault is written into a copy of a compacted session;
``plan_repairs`` must cover it and ``apply_repairs`` must leave a clean store,
a backup equal to the store before the repair, and history untouched: the rows of
``messages``, ``message_parts`` and ``summaries`` byte-identical (token columns of
``messages`` excepted when the repair is re-deriving token estimates, the one
mutation the store permits), every lineage row still there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from mnesis import CompactionConfig, MnesisConfig, MnesisSession, StorePool
from mnesis.cli import app
from mnesis.integrity import (
    IntegrityChecker,
    IntegrityReport,
    RepairPlan,
    ViolationKind,
    apply_repairs,
    plan_repairs,
)
from mnesis.integrity.report import REPAIRABLE
from mnesis.llm import FakeLLM
from mnesis.store import ImmutableStore
from tests.compaction import lineage_report
from tests.integrity.checksums import (
    database_checksum,
    history_checksum,
    integrity_check,
    lineage_rows,
)
from tests.integrity.faults import (
    FAULTS,
    Fault,
    inflated_token_estimate,
    last_message_dropped,
    two_messages_swapped,
    two_summaries_merging_each_other,
)
from tests.integrity.tampering import tampering
from tests.integrity.template import Template, build_template, copy_database

K = ViolationKind
NO_AUTO = MnesisConfig(compaction=CompactionConfig(auto=False))


REPAIRABLE_FAULTS = [f for f in FAULTS if f.repairable]
UNREPAIRABLE_FAULTS = [f for f in FAULTS if not f.repairable]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return build_template(str(tmp_path_factory.mktemp("repairs") / "template.db"))


async def corrupted(template: Template, tmp_path: Path, scenario: Fault) -> str:
    db_path = copy_database(template.db_path, str(tmp_path / "store.db"))
    with tampering(db_path, drop_triggers=scenario.drop_triggers) as conn:
        scenario.inject(conn, template.session_id)
    return db_path


async def checked(
    store: ImmutableStore, session_id: str | None, scenario: Fault
) -> IntegrityReport:
    checker = IntegrityChecker(store, check_tokens=scenario.check_tokens, deep=scenario.deep)
    report = await checker.run(session_id)
    assert set(report.by_kind()) == {k.value for k in scenario.kinds}, report.violations
    return report


class TestEveryRepairableKindIsRepaired:
    def test_every_repairable_kind_has_a_scenario(self) -> None:
        assert {k for s in REPAIRABLE_FAULTS for k in s.kinds} == set(REPAIRABLE)

    @pytest.mark.parametrize("scenario", REPAIRABLE_FAULTS, ids=lambda s: s.name)
    async def test_the_repair_leaves_a_clean_store_a_backup_and_history_untouched(
        self, template: Template, tmp_path: Path, pool: StorePool, scenario: Fault
    ) -> None:
        db_path = await corrupted(template, tmp_path, scenario)
        sid = template.session_id
        store = await pool.acquire(db_path=db_path)
        try:
            plan = plan_repairs(await checked(store, sid, scenario))
            assert plan.actions and plan.unrepairable == []
            before = database_checksum(db_path)
            history = history_checksum(db_path, with_token_counts=not scenario.check_tokens)
            lineage = lineage_rows(db_path)
            backup = str(tmp_path / "before-repair.db")

            outcome = await apply_repairs(store, plan, backup_path=backup)

            assert outcome.backup_path == backup
            assert outcome.applied == len(plan.actions)
            assert integrity_check(backup)[0] == ["ok"]
            assert database_checksum(backup) == before
            assert outcome.report_after.violations == []
            again = await IntegrityChecker(store, check_tokens=True).run()
            assert again.violations == []
            assert (await lineage_report(store, db_path, sid)).problems == []
        finally:
            await store.close()
        assert integrity_check(db_path) == (["ok"], [])
        assert history_checksum(db_path, with_token_counts=not scenario.check_tokens) == history
        assert lineage_rows(db_path) >= lineage

    async def test_one_plan_repairs_every_session_of_the_store(
        self, template: Template, tmp_path: Path, pool: StorePool
    ) -> None:
        db_path = copy_database(template.db_path, str(tmp_path / "store.db"))
        store = await pool.acquire(db_path=db_path)
        try:
            other_id = await _another_session(store)
        finally:
            await store.close()
        with tampering(db_path) as conn:
            last_message_dropped(conn, template.session_id)
            two_messages_swapped(conn, other_id)
        store = await pool.acquire(db_path=db_path)
        try:
            report = await IntegrityChecker(store).run()
            assert {v.session_id for v in report.violations} == {template.session_id, other_id}
            plan = plan_repairs(report)
            assert {a.session_id for a in plan.actions} == {template.session_id, other_id}
            outcome = await apply_repairs(store, plan, backup_path=str(tmp_path / "b.db"))
            assert outcome.report_after.ok
            assert outcome.report_after.sessions_checked == 2
            assert (await IntegrityChecker(store).run()).ok
        finally:
            await store.close()


class TestUnrepairableKinds:
    @pytest.mark.parametrize("scenario", UNREPAIRABLE_FAULTS, ids=lambda s: s.name)
    async def test_they_are_listed_and_the_plan_changes_nothing(
        self, template: Template, tmp_path: Path, pool: StorePool, scenario: Fault
    ) -> None:
        db_path = await corrupted(template, tmp_path, scenario)
        store = await pool.acquire(db_path=db_path)
        try:
            report = await checked(store, template.session_id, scenario)
            plan = plan_repairs(report)
            assert plan.actions == []
            assert len(plan.unrepairable) == len(report.violations)
            assert all(v.object_id in "\n".join(plan.unrepairable) for v in report.violations)
            before = database_checksum(db_path)
            outcome = await apply_repairs(store, plan, backup_path=str(tmp_path / "b.db"))
            assert outcome.applied == 0
        finally:
            await store.close()
        assert database_checksum(db_path) == before


class TestNothingIsWrittenUnlessAsked:
    async def test_checking_and_planning_write_nothing(
        self, template: Template, tmp_path: Path, pool: StorePool
    ) -> None:
        db_path = await corrupted(template, tmp_path, REPAIRABLE_FAULTS[1])
        before = database_checksum(db_path)
        store = await pool.acquire(db_path=db_path)
        try:
            report = await IntegrityChecker(store, check_tokens=True).run()
            plan = plan_repairs(report)
        finally:
            await store.close()
        assert plan.actions
        assert database_checksum(db_path) == before
        assert _files(tmp_path) <= {"store.db", "store.db-shm", "store.db-wal"}  # no backup

    def test_an_empty_report_plans_nothing(self) -> None:
        assert plan_repairs(IntegrityReport()) == RepairPlan()


def _files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


async def _another_session(store: ImmutableStore) -> str:
    """A second session of the store with a few messages of its own."""
    session = await MnesisSession.create(
        model="fake/other", db_path=store.location, pool=store.pool, llm=FakeLLM(), config=NO_AUTO
    )
    for turn in range(3):
        await session.record(f"question {turn}", f"answer {turn}")
    await session.close()
    return session.id


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def broken(template: Template, tmp_path: Path) -> str:
    """A copy of the template with two repairable faults and a wrong token estimate."""
    db_path = copy_database(template.db_path, str(tmp_path / "store.db"))
    with tampering(db_path) as conn:
        last_message_dropped(conn, template.session_id)
        inflated_token_estimate(conn, template.session_id)
    return db_path


class TestTheCheckCommandRepairsOnlyWhenAsked:
    def test_plan_prints_the_plan_and_writes_nothing(self, broken: str, tmp_path: Path) -> None:
        before = database_checksum(broken)
        result = invoke("check", "--db", broken, "--tokens", "--plan")
        assert result.exit_code == 1, result.output
        assert "Repair plan" in result.stdout
        assert "rebuild_context" in result.stdout and "rederive_tokens" in result.stdout
        assert "Nothing was changed" in result.stdout
        assert database_checksum(broken) == before
        assert _files(tmp_path) <= {"store.db", "store.db-shm", "store.db-wal"}

    def test_repair_backs_up_repairs_and_checks_again(self, broken: str, tmp_path: Path) -> None:
        before = database_checksum(broken)
        history = history_checksum(broken, with_token_counts=False)
        result = invoke("check", "--db", broken, "--tokens", "--repair")
        assert result.exit_code == 0, result.output
        (backup,) = (p for p in tmp_path.iterdir() if ".before-repair-" in p.name)
        assert f"Backup written to {backup}" in result.stdout.replace("\n", "")
        assert "Applied 2 repair actions" in result.stdout
        assert result.stdout.rstrip().endswith("✓ no violations")
        assert database_checksum(str(backup)) == before
        assert history_checksum(broken, with_token_counts=False) == history
        assert invoke("check", "--db", broken, "--tokens").exit_code == 0

    def test_repair_json_reports_the_backup_and_the_check_after(
        self, broken: str, tmp_path: Path
    ) -> None:
        backup = str(tmp_path / "my-backup.db")
        result = invoke(
            "check", "--db", broken, "--tokens", "--repair", "--backup", backup, "--json"
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["ok"] is False and len(data["violations"]) == 2
        assert [a["action"] for a in data["plan"]["actions"]] == [
            "rederive_tokens",
            "rebuild_context",
        ]
        assert data["repair"]["backup_path"] == backup
        assert data["repair"]["applied"] == 2
        assert data["repair"]["after"]["ok"] is True
        assert integrity_check(backup)[0] == ["ok"]

    def test_what_cannot_be_repaired_is_listed_and_exits_1(
        self, template: Template, tmp_path: Path
    ) -> None:
        db_path = copy_database(template.db_path, str(tmp_path / "store.db"))
        with tampering(db_path) as conn:
            two_summaries_merging_each_other(conn, template.session_id)
            last_message_dropped(conn, template.session_id)
        result = invoke("check", "--db", db_path, "--repair")
        assert result.exit_code == 1, result.output
        assert "cannot be repaired automatically" in result.stdout
        assert "dag_cycle" in result.stdout.split("Left after the repair")[-1]
        assert "lost_from_view" not in result.stdout.split("Left after the repair")[-1]

    def test_repairing_a_clean_store_writes_no_backup(
        self, template: Template, tmp_path: Path
    ) -> None:
        db_path = copy_database(template.db_path, str(tmp_path / "store.db"))
        result = invoke("check", "--db", db_path, "--repair")
        assert result.exit_code == 0, result.output
        assert "Backup" not in result.stdout
        assert _files(tmp_path) <= {"store.db", "store.db-shm", "store.db-wal"}
