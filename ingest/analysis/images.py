"""Images in Tool Messages: where they are, how big they are, and what they cost the model.

Pure: a message's raw payload (and its text, when the text is JSON) in, :class:`ImageFact` per
image out. Analysis (``ingest.analysis.trace``) adds their tokens to the Tool Message's size; the
base64 bytes are never counted as text (parsers keep only text parts in ``content``, and
:func:`countable_text` blanks base64 payloads written inside JSON text).

**Image parts recognized** (anywhere in the raw payload, except Claude Code's ``toolUseResult``
envelope, which repeats the result):

* Anthropic ``{"type": "image", "source": {"type": "base64", "media_type", "data"}}`` (also
  ``url`` / ``file`` sources, whose size is unknown);
* OpenAI Chat Completions ``{"type": "image_url", "image_url": {"url", "detail"}}``;
* OpenAI Responses ``{"type": "input_image", "image_url", "detail"}`` (or a ``file_id``);
* MCP image content ``{"type": "image", "data", "mimeType"}``;
* LangChain standard blocks ``{"type": "image", "base64" | "data" | "url", "mime_type"}``.

**Size**: width and height are read from the image header (PNG, JPEG, GIF, WebP) with Pillow,
which opens an image lazily and reads only its header; only the first 64 KiB of the base64
text are decoded (all of it when a JPEG keeps its size further in). A URL, a file id or bytes
Pillow cannot read give an unknown size.

**Tokens**, by the rule of the provider whose model reads the image (:func:`image_rule`):

* ``anthropic`` (Claude vision docs, "Calculate image costs"): an image whose long edge is over
  1568 px, or that would cost over ~1,600 tokens, is first scaled down preserving its aspect
  ratio; then ``tokens = ceil(width * height / 750)``. Unknown size: 1,600, the ceiling.
* ``openai`` (OpenAI vision guide, "Calculating costs", tile-based models): ``detail: low``
  costs the base; otherwise the image is scaled to fit 2048 x 2048, then down so its shortest
  side is at most 768 px, and every 512 px tile costs the tile price on top of the base:
  85 + 170 per tile for GPT-4o, GPT-4.1, GPT-4.5, GPT-5 …; 75 + 150 for o1 and o3; 2,833 +
  5,667 for gpt-4o-mini. ``auto`` and a missing detail count as ``high``. Unknown size: the
  ceiling, 8 tiles (768 x 2048). The patch-based models (gpt-4.1-mini/nano, o4-mini) are
  counted with the tile rule too: an estimate.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from typing import Any, Final

import orjson

from db.contract.vocabulary import ImageRule

#: Base64 characters decoded to read a header (48 KiB of image bytes).
HEAD_B64_CHARS: Final = 65_536
#: Base64 text longer than this is not decoded whole when its head did not tell the size.
MAX_B64_CHARS: Final = 40 * 1024 * 1024
#: Anthropic: longest edge and most tokens before the image is scaled down.
ANTHROPIC_MAX_EDGE: Final = 1568
ANTHROPIC_MAX_TOKENS: Final = 1600
ANTHROPIC_PIXELS_PER_TOKEN: Final = 750
#: OpenAI tile rule: the box the image is fitted into, the shortest side, the tile edge.
OPENAI_BOX: Final = 2048
OPENAI_SHORT_SIDE: Final = 768
OPENAI_TILE: Final = 512
OPENAI_MAX_TILES: Final = 8
#: (model prefix, base tokens, tokens per tile), first match wins; others: 85 + 170.
OPENAI_TILE_COSTS: Final[tuple[tuple[str, int, int], ...]] = (
    ("gpt-4o-mini", 2833, 5667),
    ("o1", 75, 150),
    ("o3", 75, 150),
    ("computer-use-preview", 65, 129),
)
OPENAI_DEFAULT_COSTS: Final = (85, 170)
_PILLOW_FORMATS: Final = ("PNG", "JPEG", "GIF", "WEBP")
#: Keys whose value repeats what the payload already holds (Claude Code's result envelope).
_SKIPPED_KEYS: Final = frozenset({"toolUseResult"})
_DATA_URL = re.compile(r"data:(image/[\w.+-]+)?(?:;[\w=.-]+)*;base64,", re.IGNORECASE)
_OPENAI_MODEL = re.compile(r"(?:gpt-|chatgpt|o\d(?:-|$)|computer-use)")


@dataclass(frozen=True, slots=True)
class ImagePart:
    """One image part as found: its dialect, declared media type, base64 data or URL, detail."""

    dialect: str
    media_type: str | None = None
    data: str | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class ImageFact:
    """One image of a message as counted: what it is, its size (None: unknown), its tokens."""

    media: str | None
    width: int | None
    height: int | None
    rule: ImageRule
    tokens: int
    detail: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The stored form (``tool_results.images`` items)."""
        return {
            "media": self.media,
            "width": self.width,
            "height": self.height,
            "rule": self.rule,
            "tokens": self.tokens,
            "detail": self.detail,
        }


def find_images(payload: Any) -> list[ImagePart]:
    """The image parts anywhere in ``payload`` (a raw message, a content list), in order.

    >>> source = {"type": "base64", "media_type": "image/png", "data": "x"}
    >>> find_images({"content": [{"type": "text"}, {"type": "image", "source": source}]})
    [ImagePart(dialect='anthropic', media_type='image/png', data='x', detail=None)]
    """
    return list(_walk(payload, 0))


def _walk(node: Any, depth: int) -> Iterator[ImagePart]:
    if depth > 24:
        return
    if isinstance(node, list):
        for item in node:
            if isinstance(item, dict | list):
                yield from _walk(item, depth + 1)
        return
    if not isinstance(node, dict):
        return
    part = _image_part(node)
    if part is not None:
        yield part
        return
    for key, value in node.items():
        if isinstance(value, dict | list) and key not in _SKIPPED_KEYS:
            yield from _walk(value, depth + 1)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _image_part(node: dict[str, Any]) -> ImagePart | None:
    kind = node.get("type")
    if kind == "image":
        source = node.get("source")
        if isinstance(source, dict):  # Anthropic
            data = _text(source.get("data")) if source.get("type") == "base64" else None
            return ImagePart("anthropic", _text(source.get("media_type")), data)
        if isinstance(node.get("mimeType"), str) or (
            isinstance(node.get("data"), str) and "source_type" not in node
        ):  # MCP image content
            return ImagePart("mcp", _text(node.get("mimeType")), _text(node.get("data")))
        data = _text(node.get("base64")) or _text(node.get("data"))  # LangChain
        if data is None:
            data = _from_url(_text(node.get("url")))[1]
        return ImagePart("langchain", _text(node.get("mime_type")), data)
    if kind == "image_url":  # OpenAI Chat Completions
        ref = node.get("image_url")
        url = _text(ref.get("url")) if isinstance(ref, dict) else _text(ref)
        detail = _text(ref.get("detail")) if isinstance(ref, dict) else None
        media, data = _from_url(url)
        return ImagePart("openai", media, data, detail)
    if kind == "input_image":  # OpenAI Responses
        media, data = _from_url(_text(node.get("image_url")))
        return ImagePart("openai", media, data, _text(node.get("detail")))
    return None


def _from_url(url: str | None) -> tuple[str | None, str | None]:
    """(media type, base64 data) of a ``data:`` URL; (None, None) for any other URL."""
    if not url:
        return None, None
    match = _DATA_URL.match(url)
    if match is None:
        return None, None
    return match.group(1), url[match.end() :]


def image_size(data: str) -> tuple[str, int, int] | None:
    """(format, width, height) from base64 image bytes, reading the header only; None when
    the bytes are not a PNG, JPEG, GIF or WebP image Pillow can size.

    >>> image_size("R0lGODlhAQACAIAAAP///wAAACH5BAEAAAAALAAAAAABAAIAAAICBAoAOw==")
    ('gif', 1, 2)
    """
    head = _decode(data[:HEAD_B64_CHARS])
    size = _pillow_size(head) if head else None
    if size is None and HEAD_B64_CHARS < len(data) <= MAX_B64_CHARS:
        whole = _decode(data)
        size = _pillow_size(whole) if whole else None
    return size


def _decode(text: str) -> bytes | None:
    text = "".join(text.split()) if any(c.isspace() for c in text[:200]) else text
    usable = len(text) - len(text) % 4
    try:
        return base64.b64decode(text[:usable])
    except (binascii.Error, ValueError):
        try:
            return base64.urlsafe_b64decode(text[:usable])
        except (binascii.Error, ValueError):
            return None


def _pillow_size(blob: bytes) -> tuple[str, int, int] | None:
    from PIL import Image  # imported on first use: most traces have no image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(BytesIO(blob), formats=_PILLOW_FORMATS) as image:
                width, height = image.size
                kind = (image.format or "").lower()
    except Exception:  # truncated, unknown or hostile bytes: size unknown
        return None
    if width <= 0 or height <= 0:
        return None
    return kind, int(width), int(height)


def image_rule(model: str | None, trace_format: str, dialect: str) -> ImageRule:
    """Whose rule counts an image: the model's provider when the model is named, else the
    format's, else the image part's dialect (MCP and LangChain parts: ``anthropic``).

    >>> image_rule("claude-sonnet-4-5", "langfuse", "mcp"), image_rule("gpt-4o", "otlp", "mcp")
    ('anthropic', 'openai')
    >>> image_rule(None, "openai_chat", "mcp"), image_rule(None, "otlp", "openai")
    ('openai', 'openai')
    """
    name = _model_name(model)
    if "claude" in name:
        return "anthropic"
    if name and _OPENAI_MODEL.match(name):
        return "openai"
    if trace_format in ("anthropic", "claude_code"):
        return "anthropic"
    if trace_format in ("openai_chat", "openai_responses", "toolbench"):
        return "openai"
    return "openai" if dialect == "openai" else "anthropic"


def _model_name(model: str | None) -> str:
    """The model's name without a provider prefix (``openai/gpt-4o`` -> ``gpt-4o``), lowercased."""
    return (model or "").rsplit("/", 1)[-1].strip().lower()


def anthropic_tokens(width: int, height: int) -> int:
    """Claude's image tokens: scaled down within 1568 px and ~1,600 tokens, then w*h/750.

    >>> anthropic_tokens(200, 200), anthropic_tokens(1000, 1000), anthropic_tokens(1092, 1092)
    (54, 1334, 1590)
    >>> anthropic_tokens(4000, 3000)
    1600
    """
    w, h = float(width), float(height)
    longest = max(w, h)
    if longest > ANTHROPIC_MAX_EDGE:
        w, h = w * ANTHROPIC_MAX_EDGE / longest, h * ANTHROPIC_MAX_EDGE / longest
    cap = ANTHROPIC_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN
    if w * h > cap:
        shrink = math.sqrt(cap / (w * h))
        w, h = w * shrink, h * shrink
    return max(1, min(ANTHROPIC_MAX_TOKENS, math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)))


def openai_tile_costs(model: str | None) -> tuple[int, int]:
    """(base tokens, tokens per 512 px tile) of an OpenAI model.

    >>> openai_tile_costs("gpt-4o-2024-08-06"), openai_tile_costs("o3"), openai_tile_costs(None)
    ((85, 170), (75, 150), (85, 170))
    """
    name = _model_name(model)
    for prefix, base, tile in OPENAI_TILE_COSTS:
        if name == prefix or name.startswith(prefix + "-"):
            return base, tile
    return OPENAI_DEFAULT_COSTS


def openai_tokens(width: int, height: int, detail: str | None, model: str | None = None) -> int:
    """OpenAI's image tokens under the tile rule.

    >>> openai_tokens(1024, 1024, "high"), openai_tokens(2048, 4096, None)
    (765, 1105)
    >>> openai_tokens(4096, 8192, "low")
    85
    """
    base, tile = openai_tile_costs(model)
    if detail == "low":
        return base
    w, h = float(width), float(height)
    if max(w, h) > OPENAI_BOX:
        shrink = OPENAI_BOX / max(w, h)
        w, h = w * shrink, h * shrink
    if min(w, h) > OPENAI_SHORT_SIDE:
        shrink = OPENAI_SHORT_SIDE / min(w, h)
        w, h = w * shrink, h * shrink
    tiles = math.ceil(round(w, 6) / OPENAI_TILE) * math.ceil(round(h, 6) / OPENAI_TILE)
    return base + tile * tiles


def count_image(part: ImagePart, rule: ImageRule, model: str | None) -> ImageFact:
    """One image part counted by ``rule``; an unknown size costs the rule's ceiling."""
    size = image_size(part.data) if part.data else None
    media = size[0] if size else _media_name(part.media_type)
    if rule == "anthropic":
        tokens = anthropic_tokens(size[1], size[2]) if size else ANTHROPIC_MAX_TOKENS
    elif size:
        tokens = openai_tokens(size[1], size[2], part.detail, model)
    elif part.detail == "low":
        tokens = openai_tile_costs(model)[0]
    else:
        base, tile = openai_tile_costs(model)
        tokens = base + tile * OPENAI_MAX_TILES
    width, height = (size[1], size[2]) if size else (None, None)
    detail = part.detail if rule == "openai" else None
    return ImageFact(media, width, height, rule, tokens, detail)


def _media_name(media_type: str | None) -> str | None:
    """``image/png`` -> ``png`` (``jpg`` -> ``jpeg``)."""
    if not media_type:
        return None
    name = media_type.rsplit("/", 1)[-1].strip().lower()[:20]
    return "jpeg" if name == "jpg" else (name or None)


def message_images(raw: Any, content: str, model: str | None, trace_format: str) -> list[ImageFact]:
    """Every image of one message (its raw payload, or its text when the text is JSON holding
    image parts and the payload has none), counted by the rule of :func:`image_rule`."""
    parts = find_images(raw)
    if not parts and "image" in content[:4096] and content.lstrip()[:1] in ("{", "["):
        try:
            parts = find_images(orjson.loads(content))
        except orjson.JSONDecodeError:
            parts = []
    return [count_image(p, image_rule(model, trace_format, p.dialect), model) for p in parts]


_B64_IN_TEXT = re.compile(
    r"(data:image/[\w.+-]+(?:;[\w=.-]+)*;base64,|\"(?:data|base64)\"\s*:\s*\")"
    r"[A-Za-z0-9+/_-]{256,}={0,2}"
)


def countable_text(content: str) -> str:
    """``content`` with base64 image payloads written inside it (data URLs, ``"data"`` /
    ``"base64"`` values of 256+ base64 characters) cut to their prefix, so that they are not
    counted as text tokens. Text without such a payload is returned as it is.

    >>> countable_text('{"type":"image","data":"' + "A" * 300 + '","mimeType":"image/png"}')
    '{"type":"image","data":"","mimeType":"image/png"}'
    """
    if len(content) < 256 or "image" not in content:
        return content
    return _B64_IN_TEXT.sub(lambda m: m.group(1), content)
