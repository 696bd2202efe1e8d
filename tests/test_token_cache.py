"""The token count cache: the same exact counts, long texts counted once, least recently used
entries dropped first."""

from __future__ import annotations

from ingest.analysis.tokens import CACHED_MIN_CHARS, CountCache, count_tokens

LONG = "The quick brown fox jumps over the lazy dog. " * 10  # 450 characters


def test_cached_counts_are_the_counts_and_long_texts_are_counted_once() -> None:
    cache = CountCache()
    texts = [LONG, "short text", "", LONG + "?!", LONG]
    expected = [count_tokens(t) for t in texts]
    assert expected == [101, 2, 0, 102, 101]
    assert cache.count_many(texts, "o200k_base") == expected
    assert cache.hits == 1  # the second LONG; short texts are never cached
    assert cache.count_many(texts, "o200k_base") == expected
    assert cache.hits == 4


def test_the_encoding_is_part_of_the_key() -> None:
    cache = CountCache()
    text = "こんにちは世界。" * 40
    o200k, cl100k = count_tokens(text, "o200k_base"), count_tokens(text, "cl100k_base")
    assert (o200k, cl100k) == (120, 200)
    assert cache.count_many([text], "o200k_base") == [o200k]
    assert cache.count_many([text], "cl100k_base") == [cl100k]
    assert cache.hits == 0


def test_the_least_recently_used_count_goes_first() -> None:
    cache = CountCache(size=2)
    a, b, c = (ch * CACHED_MIN_CHARS for ch in "abc")
    cache.count_many([a, b], "o200k_base")
    cache.count_many([a], "o200k_base")  # a is now the most recently used
    cache.count_many([c], "o200k_base")  # b goes
    hits = cache.hits
    cache.count_many([a, c], "o200k_base")
    assert cache.hits == hits + 2
    cache.count_many([b], "o200k_base")
    assert cache.hits == hits + 2


def test_counting_loads_only_the_extension_not_the_packages_python_tables() -> None:
    """The bpe-openai package's ``__init__`` decodes all three encodings' rank files in Python
    (about a CPU second per import process); ToolLens loads the extension alone and counts
    the same as the package's own tokenizer."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from ingest.analysis.tokens import count_tokens\n"
        "counts = [count_tokens('Tool Messages: ünïcode, code() and 12345', e) "
        "for e in ('o200k_base', 'cl100k_base')]\n"
        "alone = 'bpe_openai' not in sys.modules\n"
        "import bpe_openai\n"
        "same = counts == [bpe_openai.build_encoding_from_name(e).encode_ordinary("
        "'Tool Messages: ünïcode, code() and 12345').__len__() "
        "for e in ('o200k_base', 'cl100k_base')]\n"
        "print(alone, same, counts)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split(maxsplit=2)[:2] == ["True", "True"]
