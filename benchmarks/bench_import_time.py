"""Import cost: CPU time and modules loaded by ``import mnesis``, ``from mnesis import
MnesisSession``, ``mnesis --help``, ``mnesis --version`` and one inspection command's
module (``mnesis sessions --help``), each in a fresh interpreter.

Every measurement is a new process (nothing cached in ``sys.modules``; the ``.pyc``
files are warm after the first round, which is what a user sees from the second run
on). The rounds run the cases interleaved, so a noisy moment on a shared machine hits
all of them; each number is the median over the rounds.

* ``import CPU``: ``time.process_time()`` around the statement inside the child (for
  the CLI cases: importing ``mnesis.cli`` and running the command, its output kept);
* ``process CPU``: user + system time of the whole child (interpreter start-up
  included), from ``getrusage(RUSAGE_CHILDREN)``; the floor is ``python -c pass``;
* ``modules``: ``len(sys.modules)`` after the statement (the floor's own ~35 included);
* ``typer app --help (floor)``: a one-command typer app with the same Markdown help, the
  least any typer CLI's ``--help`` costs.

``--tree`` compares source trees (``src`` folders put first on ``PYTHONPATH``), e.g.
before and after a change (``git archive BASE src | tar -x -C /tmp/before``, then
``--tree /tmp/before/src --tree src``).

Run: ``python -m benchmarks.bench_import_time [--rounds N] [--tree SRC ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_TIMED = """
import json, sys, time
started = time.process_time()
{statement}
cpu = time.process_time() - started
print(json.dumps({{"cpu": cpu, "modules": len(sys.modules)}}))
"""

_CLI = """import contextlib, io
with contextlib.redirect_stdout(io.StringIO()) as out:
    from mnesis.cli import run
    code = run({argv!r})
if code or {expect!r} not in out.getvalue():
    raise SystemExit(f"exit code {{code}}: {{out.getvalue()[:200]!r}}")"""

_TYPER_FLOOR = """import contextlib, io
import typer
from typer.main import get_command
app = typer.Typer(add_completion=False, rich_markup_mode="markdown")
@app.callback()
def main() -> None:
    \"\"\"An app.\"\"\"
@app.command()
def one() -> None:
    \"\"\"One.\"\"\"
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    get_command(app).main(args=["--help"], prog_name="app")"""

CASES: dict[str, str] = {
    "import mnesis": "import mnesis",
    "from mnesis import MnesisSession": "from mnesis import MnesisSession",
    "mnesis --help": _CLI.format(argv=["--help"], expect="Usage"),
    "mnesis --version": _CLI.format(argv=["--version"], expect="mnesis "),
    "mnesis sessions --help": _CLI.format(argv=["sessions", "--help"], expect="Usage"),
    "typer app --help (floor)": _TYPER_FLOOR,
}
FLOOR = "python -c pass"


@dataclass
class Samples:
    """One case's measurements over the rounds."""

    import_cpu: list[float] = field(default_factory=list)
    process_cpu: list[float] = field(default_factory=list)
    modules: list[int] = field(default_factory=list)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> tuple[str, float]:
    """The child's stdout and its CPU seconds (user + system)."""
    before = _children_cpu()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"{argv[1:]} failed:\n{done.stderr[-2000:]}")
    return done.stdout, _children_cpu() - before


def _measure(case: str, env: dict[str, str], into: Samples) -> None:
    if case == FLOOR:
        _, cpu = _run([sys.executable, "-c", "pass"], env)
    else:
        out, cpu = _run([sys.executable, "-c", _TIMED.format(statement=CASES[case])], env)
        child = json.loads(out)
        into.import_cpu.append(float(child["cpu"]))
        into.modules.append(int(child["modules"]))
    into.process_cpu.append(cpu)


def _environment(tree: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(tree).resolve()), *filter(None, [env.get("PYTHONPATH")])]
        )
    return env


def _commit(tree: str | None) -> str:
    if tree is None:
        return "(installed)"
    done = subprocess.run(
        ["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or tree


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.0f}" if values else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=10, help="fresh processes per case")
    parser.add_argument(
        "--tree", action="append", help="a src folder to measure (repeat to compare)"
    )
    args = parser.parse_args(argv)
    trees: list[str | None] = list(args.tree) if args.tree else [None]
    cases = [FLOOR, *CASES]
    samples = {(tree, case): Samples() for tree in trees for case in cases}
    load_start = os.getloadavg()
    for _ in range(args.rounds):
        for tree in trees:
            env = _environment(tree)
            for case in cases:
                _measure(case, env, samples[tree, case])
    load_end = os.getloadavg()

    print(
        f"{args.rounds} rounds, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end"
    )
    print()
    print("| tree | case | import CPU ms | process CPU ms | modules |")
    print("|---|---|---:|---:|---:|")
    for tree in trees:
        for case in cases:
            got = samples[tree, case]
            modules = f"{statistics.median(got.modules):,.0f}" if got.modules else "-"
            print(
                f"| {_commit(tree)} | `{case}` | {_ms(got.import_cpu)} "
                f"| {_ms(got.process_cpu)} | {modules} |"
            )


if __name__ == "__main__":
    main()
