"""A Claude Code message split over several lines stays one message when its lines
straddle two imports of a growing file (the second import appends the rest of its parts
to the stored message), and an import interrupted between that append and its batch
neither loses nor repeats a part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mnesis.importers import api, detect_format, import_file
from mnesis.store import ImmutableStore
from tests.importers.shapes import lines as _lines
from tests.importers.shapes import shape as _shape

SAMPLES = Path(__file__).parent / "samples"


async def _import_in_pieces(tmp_path: Path, name: str, cuts: list[int]) -> list[Any]:
    lines = _lines()
    path = tmp_path / f"{name}.jsonl"
    store = await ImmutableStore.open(str(tmp_path / f"{name}.db"))
    try:
        path.write_text("")
        sessions: list[str] = []
        for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
            with path.open("a") as handle:
                handle.write("".join(lines[start:end]))
            report = await import_file(store, str(path))
            sessions = report.session_ids
        return await _shape(store, sessions)
    finally:
        await store.close()


@pytest.mark.parametrize("parser", ["thread", "process"])
async def test_each_cut_of_a_growing_file_stores_what_one_import_stores(
    tmp_path: Path, parser: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the parser thread, and in the parser process, which builds the rows itself and
    counts the parts that continue a stored message as the next message's neighbours."""
    whole = await _import_in_pieces(tmp_path, "whole", [])
    if parser == "process":
        monkeypatch.setattr(api, "PROCESS_BYTES", 0)
    assert whole[-1] == []
    messages = [m for m in whole if isinstance(m, tuple)]
    # user, assistant (3 lines), user, assistant; and the sidechain's two replies
    assert [m[0] for m in messages] == ["user", "assistant"] * 2 + ["assistant"] * 2
    assert [len(m[3]) for m in messages] == [1, 3, 1, 3, 1 + 1, 1 + 1]
    # Each single cut on the thread; the process (a child per import) takes the cut in the
    # middle of the three-line reply and then a cut at every line, which meets each place.
    cuts = range(1, len(_lines())) if parser == "thread" else [3]
    for cut in cuts:
        assert await _import_in_pieces(tmp_path, f"cut{cut}", [cut]) == whole, cut
    assert await _import_in_pieces(tmp_path, "every", list(range(1, len(_lines())))) == whole


async def test_an_import_stopped_between_extending_and_its_batch_resumes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = await _import_in_pieces(tmp_path, "whole", [])
    lines = _lines()
    path = tmp_path / "grow.jsonl"
    path.write_text("".join(lines[:2]))  # the reply's first line only
    store = await ImmutableStore.open(str(tmp_path / "grow.db"))
    try:
        sessions = (await import_file(store, str(path))).session_ids
        with path.open("a") as handle:
            handle.write("".join(lines[2:]))

        async def dies(*args: object, **kwargs: object) -> None:
            raise RuntimeError("killed")

        with monkeypatch.context() as patch:
            patch.setattr(store, "append_batch", dies)  # the batch's write, either path
            patch.setattr(store.backend.batch, "append_rows", dies)
            with pytest.raises(RuntimeError, match="killed"):
                await import_file(store, str(path))
        # The reply got its two other parts; the batch after them was not written.
        (reply,) = [m for m in await store.get_messages(sessions[0]) if m.role == "assistant"]
        assert len(reply.parts) == 3
        again = await import_file(store, str(path))
        assert again.status == "grown"
        assert await _shape(store, again.session_ids) == whole
    finally:
        await store.close()


@pytest.mark.parametrize("name", ["claude_code.jsonl", "codex_rollout.jsonl"])
async def test_each_cut_of_a_sample_stores_what_one_import_stores(
    tmp_path: Path, name: str
) -> None:
    lines = (SAMPLES / name).read_text().splitlines(keepends=True)
    shapes = []
    for cut in range(len(lines) + 1):
        path = tmp_path / f"{cut}.jsonl"
        store = await ImmutableStore.open(str(tmp_path / f"{cut}.db"))
        try:
            path.write_text("".join(lines[:cut]))
            if cut:
                await import_file(store, str(path), detect_format(str(SAMPLES / name)))
            with path.open("a") as handle:
                handle.write("".join(lines[cut:]))
            report = await import_file(store, str(path))
            shapes.append(await _shape(store, report.session_ids))
        finally:
            await store.close()
    assert shapes[0][-1] == []
    assert all(shape == shapes[0] for shape in shapes), [s == shapes[0] for s in shapes]
