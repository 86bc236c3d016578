"""The store contract: content-addressed file references."""

from __future__ import annotations

from mnesis.models.ids import new_id
from mnesis.store import (
    FileReference,
    ImmutableStore,
)


class TestFileReferences:
    async def test_a_file_reference_is_found_by_content_id_and_by_file_id(
        self, store: ImmutableStore
    ) -> None:
        ref = FileReference(
            content_id="sha256:" + "cd" * 32,
            file_id=new_id("file"),
            path="logs/app.log",
            file_type="log",
            token_count=50_000,
            exploration_summary="errors at 10:02",
            byte_size=200_000,
        )
        stored = await store.store_file_reference(ref)
        assert stored.file_id == ref.file_id and stored.created_at > 0
        assert await store.get_file_reference(ref.content_id) == stored
        assert await store.get_file_reference(ref.file_id) == stored
        assert await store.get_file_reference("file_missing") is None

    async def test_storing_known_content_again_returns_the_first_reference(
        self, store: ImmutableStore
    ) -> None:
        content_id = "sha256:" + "ef" * 32
        first = await store.store_file_reference(
            FileReference(content_id, new_id("file"), "a.txt", "text", 10)
        )
        again = await store.store_file_reference(
            FileReference(content_id, new_id("file"), "copy/a.txt", "text", 10)
        )
        assert again == first
