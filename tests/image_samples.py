"""Small real images made with Pillow, as base64, for the image tests."""

from __future__ import annotations

import base64
from io import BytesIO
from typing import Any

from PIL import Image


def image_b64(kind: str, width: int, height: int, **save: Any) -> str:
    """A ``width`` x ``height`` image in Pillow format ``kind`` (PNG, JPEG …), as base64."""
    buffer = BytesIO()
    Image.new("RGB", (width, height), (200, 30, 60)).save(buffer, kind, **save)
    return base64.b64encode(buffer.getvalue()).decode()
