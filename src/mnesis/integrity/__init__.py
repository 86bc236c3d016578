"""Integrity: prove lineage is whole, plan repairs, apply them explicitly."""

from mnesis.integrity.checker import IntegrityChecker, IntegrityReport, Violation, ViolationKind
from mnesis.integrity.repair import (
    RepairAction,
    RepairOutcome,
    RepairPlan,
    apply_repairs,
    plan_repairs,
)

__all__ = [
    "IntegrityChecker",
    "IntegrityReport",
    "RepairAction",
    "RepairOutcome",
    "RepairPlan",
    "Violation",
    "ViolationKind",
    "apply_repairs",
    "plan_repairs",
]
