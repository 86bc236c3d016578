"""``codec.pre_encoded``: inside the block, exactly the listed part objects get the
columns listed with them (in the thread or task that entered it); an equal but other
object, another thread, and any part outside the block encode as always."""

from __future__ import annotations

import threading

from mnesis.models.parts import TextPart
from mnesis.store.codec import encode_part, pre_encoded
from mnesis.store.shared.part_text import shrink_content


def test_only_the_listed_objects_inside_the_block_take_the_given_columns() -> None:
    part, twin = TextPart(text="heron at dawn"), TextPart(text="heron at dawn")
    encoded = encode_part(part, shrink_content)
    given = {**encoded, "text_content": "given"}
    with pre_encoded([(part, given)]):
        assert encode_part(part, shrink_content) == given
        assert encode_part(twin, shrink_content) == encoded
        copy = encode_part(part, shrink_content)
        copy["text_content"] = "changed"  # a copy each time: the table is not changed
        assert encode_part(part, shrink_content) == given
    assert encode_part(part, shrink_content) == encoded


def test_another_thread_encodes_as_always() -> None:
    part = TextPart(text="osprey")
    encoded = encode_part(part)
    seen: list[dict[str, object]] = []
    with pre_encoded([(part, {**encoded, "text_content": "given"})]):
        thread = threading.Thread(target=lambda: seen.append(encode_part(part)))
        thread.start()
        thread.join()
    assert seen == [encoded]
