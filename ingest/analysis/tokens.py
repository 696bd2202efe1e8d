"""Exact BPE token counts that work offline.

``tiktoken.get_encoding()`` downloads its BPE files on first use and fails without internet, so
ToolLens counts with ``bpe-openai``, whose wheel carries ``o200k_base`` and ``cl100k_base``. Its
count-only path (no token list is built) is about twice as fast as tiktoken with identical counts,
and stays linear on multi-megabyte texts.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Protocol

from db.contract.vocabulary import DEFAULT_ENCODING, ENCODINGS


class _Counter(Protocol):
    def count(self, text: str) -> int: ...


_BINDINGS = "bpe_openai._bindings"


def _bindings() -> ModuleType:
    """bpe-openai's extension module, loaded on its own. Importing it the usual way runs the
    package's ``__init__``, whose tiktoken-compatible model table decodes the rank files of all
    three encodings in Python (over a second of CPU in every import process, for a wrapper
    ToolLens does not use; the extension carries its own data)."""
    loaded = sys.modules.get(_BINDINGS)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("bpe_openai")  # finds the folder, runs nothing
    for folder in (package.submodule_search_locations or []) if package else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            if not path.is_file():
                continue
            loader = importlib.machinery.ExtensionFileLoader(_BINDINGS, str(path))
            spec = importlib.util.spec_from_file_location(_BINDINGS, path, loader=loader)
            if spec is None:
                continue
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            sys.modules[_BINDINGS] = module
            return module
    import bpe_openai._bindings as bindings  # another layout: the usual way

    return bindings


@cache
def _tokenizer(encoding: str) -> _Counter:
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")
    # The bindings expose the count-only path; the tiktoken-compatible wrapper does not.
    tokenizer: _Counter = _bindings().tokenizer_for_encoding(encoding)
    return tokenizer


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact number of tokens of ``text`` under ``encoding``.

    >>> count_tokens("hello world")
    2
    """
    if not text:
        return 0
    return _tokenizer(encoding).count(text)


#: Texts at least this long have their counts remembered (hashing a shorter one costs about
#: as much as counting it).
CACHED_MIN_CHARS = 256
#: How many counts :class:`CountCache` keeps (an entry is ~150 bytes: 15 MB at most).
CACHED_COUNTS = 100_000


class CountCache:
    """Token counts of recently counted long texts, by the BLAKE2b digest of text and encoding.

    A trace that is imported again with a few more messages (a live OTLP trace growing, a
    session file that got a line appended, a duplicate delivery) has the counts of its
    unchanged messages found here instead of tokenizing them again. Least recently used
    entries go first; safe to share between threads.
    """

    def __init__(self, size: int = CACHED_COUNTS) -> None:
        self.size = size
        self.hits = 0
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def count_many(self, texts: Sequence[str], encoding: str) -> list[int]:
        """Like :func:`count_many`, counting only the long texts not seen recently."""
        tokenizer = _tokenizer(encoding)
        salt = encoding.encode()
        out: list[int] = []
        for text in texts:
            if len(text) < CACHED_MIN_CHARS:
                out.append(tokenizer.count(text) if text else 0)
                continue
            key = hashlib.blake2b(
                text.encode("utf-8", "surrogatepass"), digest_size=16, salt=salt[:16]
            ).digest()
            with self._lock:
                found = self._counts.get(key)
                if found is not None:
                    self._counts.move_to_end(key)
                    self.hits += 1
            if found is None:
                found = tokenizer.count(text)
                with self._lock:
                    self._counts[key] = found
                    if len(self._counts) > self.size:
                        self._counts.popitem(last=False)
            out.append(found)
        return out


#: The process's cache (each worker process has its own).
COUNTS = CountCache()


def count_many(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token counts of many texts (the unit of work handed to tokenizing worker processes);
    counts of long texts counted recently come from :data:`COUNTS`."""
    return COUNTS.count_many(texts, encoding)


def preload(encoding: str = DEFAULT_ENCODING) -> threading.Thread:
    """Start loading the tokenizer of ``encoding`` in a background thread and return it; join
    it before counting. Loading takes most of a CPU second, mostly outside the GIL, so work
    done meanwhile (reading the store, parsing) overlaps it on a second core."""
    thread = threading.Thread(
        target=_tokenizer, args=(encoding,), name="toollens-tokenizer", daemon=True
    )
    thread.start()
    return thread
