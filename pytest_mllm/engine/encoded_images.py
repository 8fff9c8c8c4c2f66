"""Images encoded once: a served model's requests carry each image as a PNG data URL, and the samples
that share an image (MME's two questions, VRPTEST's variants of a scene, a benchmark's repeated
pictures) share its encoding.

Keyed by the decoded pixels themselves (mode, size and a digest of the bytes), so the key is exact
whatever the image's source, and a digest costs a fraction of a PNG encoding. The content parts
kept are bounded in bytes; the least recently used go first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from pytest_mllm.engine.chat import image_content

if TYPE_CHECKING:
    from PIL import Image

DEFAULT_BUDGET_BYTES = 64 << 20  # of data URLs kept


class EncodedImages:
    """`image_content(image)`, memoised by the image's pixels (at most `budget_bytes` of data URLs kept)."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._parts: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self._sizes: dict[tuple[Any, ...], int] = {}
        self._held = 0
        self._lock = threading.Lock()
        self.encoded = 0  # images encoded (the others were found)

    def content(self, image: Image.Image) -> dict[str, Any]:
        """The chat content part of `image` (a PNG data URL); the same object for the same pixels."""
        key = (image.mode, image.size, hashlib.blake2b(image.tobytes(), digest_size=16).digest())
        with self._lock:
            part = self._parts.get(key)
            if part is not None:
                self._parts.move_to_end(key)
                return part
        part = image_content(image)
        size = len(part["image_url"]["url"])
        with self._lock:
            self.encoded += 1
            if key not in self._parts and size <= self.budget_bytes:
                self._parts[key] = part
                self._sizes[key] = size
                self._held += size
                while self._held > self.budget_bytes:
                    old, _ = self._parts.popitem(last=False)
                    self._held -= self._sizes.pop(old)
        return part
