"""Secret redaction: replace secrets in trace content by ``[REDACTED:kind]`` before it is stored.

Pure: strings and JSON-like values in, redacted copies out; no database, no Streamlit.

A :class:`Redactor` is built from a mode and an optional team rules file:

* ``off``: identity (:meth:`Redactor.off`).
* ``default``: provider API keys (OpenAI, Anthropic, Google, AWS, GitHub, GitLab, Slack, Stripe,
  Hugging Face, npm, SendGrid, PyPI, Groq), bearer tokens, JWTs, private-key blocks, passwords in
  URLs (``scheme://user:pass@host`` keeps user and host), secret-named assignments in text
  (``DB_PASSWORD=…``, ``"api_key": "…"``, ``X-Api-Key: …``) and, in JSON-like values, the whole
  value of every secret-named field (``password``, ``api_key``, ``authorization``, ``cookie`` …;
  ``ingest.redaction.rules.SECRET_FIELDS``, case- and separator-insensitive).
* ``strict``: ``default`` plus e-mail addresses, phone numbers (E.164 and separated national
  formats) and payment card numbers (Luhn-checked).

Strings that hold a JSON object or array (tool arguments and results often do) are parsed,
redacted as values and re-serialized only when something changed, so unchanged text stays
byte-identical. Dict keys are never redacted (they name fields, they do not hold secrets).

Speed: one Aho-Corasick pass (``ahocorasick-rs``) over the lowercased text finds the detectors'
literal anchors and the secret key words; a text without any costs that one scan, and only the
detectors whose anchors occur run their regex. Python's ``re`` tries every branch of an
alternation at every position, so a single guard regex of the same anchors is several times
slower; ahocorasick-rs (leftmost-longest) is the fastest of the guards measured, ``in`` per
anchor and pyahocorasick included (docs/performance.md, "Redaction").
``python -m benchmarks.redaction_bench`` measures the whole redactor.

Why not Yelp's ``detect-secrets`` (evaluated, 1.5.0): it scans files line by line and reports
(line, hashed secret, type), not spans to replace; with its default plugins and filters it is
two orders of magnitude slower on the real traces, and it found 424 of the 1,319 planted strings
of the seeded corpus (no bearer tokens, half of the OpenAI and Google keys, no private-key
bodies: it flags the BEGIN line) and made 215 findings in the 600 clean values (its entropy
plugins fire on hashes, ids and base64). Its provider patterns are what the detectors here also
encode; the keyword plugin's idea is the secret key words.

Team rules file (TOML, read with :mod:`tomllib`)::

    # extra field names whose values are secrets (case/separator-insensitive, like the built-ins)
    secret_fields = ["x-acme-session", "ledger_pin"]

    [[rules]]
    kind = "acme_token"                 # the label: [REDACTED:acme_token] ("name" works too)
    regex = "acme_[0-9a-f]{32}"         # Python regex; the whole match is replaced ...

    [[rules]]
    kind = "employee_id"
    regex = 'EMP-(?P<secret>\\d{6})'    # ... or only its named group ``secret``
    mode = "strict"                     # optional: only in strict mode (default: both modes)

A team rule runs on every string (it has no anchors), so each costs one regex search per string.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from ahocorasick_rs import AhoCorasick, MatchKind

from db.contract import exact_json
from ingest.redaction.rules import (
    COOKIE_TAIL,
    COOKIE_WORDS,
    DETECTORS,
    DIGIT_RUN,
    FIELD_TAIL,
    FIELD_WORDS,
    HEADER_PREFIX,
    HEADER_TAIL,
    HEADER_WORDS,
    MODES,
    SECRET_FIELD,
    SECRET_FIELD_SUFFIXES,
    SECRET_FIELDS,
    Detector,
    TeamRule,
    is_placeholder,
    load_rules,
    looks_like_credential,
    normalize_field,
)

#: Field-name cache bound: names repeat across records, but ids used as keys would grow it forever.
_FIELD_CACHE_MAX = 10_000
#: Roles of a key word found in text: an assignment key, or a header name.
_FIELD, _HEADER, _COOKIE = 1, 2, 3
_SEPARATORS = ("", "_", "-", ".", " ")
#: Characters of clean texts a redactor remembers (``Redactor._remember_clean``): 16 M.
_CLEAN_MEMO_CHARS = 1 << 24
#: Bytes of clean whole values a redactor remembers (``Redactor.redact_repeated``): 4 M.
_CLEAN_VALUES_BYTES = 1 << 22
#: orjson options of a remembered value's key: types orjson would write as text (dates, UUIDs,
#: dataclasses, subclasses) raise instead, and such a value is walked as always.
_VALUE_KEY_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


class RedactionCounts(Counter[str]):
    """Redactions per kind since the last :meth:`reset` (a :class:`collections.Counter`)."""

    def reset(self) -> RedactionCounts:
        """Return a copy of the counts so far and start again from zero."""
        snapshot = RedactionCounts(self)
        self.clear()
        return snapshot


class Redactor:
    """Replaces secrets by ``[REDACTED:kind]`` in strings and JSON-like values; counts them."""

    def __init__(
        self,
        mode: str = "default",
        rules_file: str | Path | None = None,
        *,
        rules: Iterable[TeamRule] = (),
        secret_fields: Iterable[str] = (),
    ) -> None:
        """Build a redactor for ``mode`` (off | default | strict) with optional team rules.

        ``rules_file`` is a TOML team rules file (module docstring); ``rules`` and
        ``secret_fields`` add the same things programmatically.
        """
        if mode not in MODES:
            raise ValueError(f"redaction mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.counts = RedactionCounts()
        team_rules = list(rules)
        extra_fields = list(secret_fields)
        if rules_file is not None:
            file_rules, file_fields = load_rules(rules_file)
            team_rules += file_rules
            extra_fields += file_fields
        strict = mode == "strict"
        self._rules = [r for r in team_rules if strict or not r.strict_only]
        self._fields = SECRET_FIELDS | {normalize_field(f) for f in extra_fields}
        self._field_cache: dict[str, bool] = {}
        #: Dict keys that are clean texts and no secret field's name (bounded like the cache).
        self._plain_keys: set[str] = set()
        self._clean: dict[str, None] = {}
        self._clean_chars = 0
        #: Clean whole values by their JSON (:meth:`redact_repeated`), and the bytes held.
        self._clean_values: dict[bytes, Any] = {}
        self._clean_values_bytes = 0
        self._detectors: list[tuple[Detector, re.Pattern[str]]] = [
            (d, d.regex) for d in DETECTORS if strict or not d.strict_only
        ]
        self._providers = [(d, rx) for d, rx in self._detectors if "secret" not in rx.groupindex]
        # Detectors without anchors (strict's phone and card patterns) run on every string with
        # a run of digits long enough for them.
        self._always = frozenset(i for i, (d, _) in enumerate(self._detectors) if not d.anchors)
        # One automaton for everything looked for in the lowercased text: detector anchors
        # (which regexes to run) and secret key words (where to look for an assigned value).
        words: dict[str, tuple[set[int], set[int]]] = {}
        for i, (det, _) in enumerate(self._detectors):
            for anchor in det.anchors:
                words.setdefault(anchor, (set(), set()))[0].add(i)
        # A team field name is looked for in text with each separator: ``x-acme-session`` is
        # also ``X_ACME_SESSION`` and ``xAcmeSession``.
        team_words = {
            sep.join(re.split(r"[-_. ]", f.lower())) for f in extra_fields for sep in _SEPARATORS
        }
        for word in (*FIELD_WORDS, *team_words):
            words.setdefault(word, (set(), set()))[1].add(_FIELD)
        for word in COOKIE_WORDS:
            words.setdefault(word, (set(), set()))[1].add(_COOKIE)
        for word in HEADER_WORDS:
            words.setdefault(word, (set(), set()))[1].add(_HEADER)
            if "-" in word:
                # Leftmost-longest matching reports ``x-api-key``, never the ``api-key`` inside
                # it, so the header name also stands for the key word.
                words[word][1].add(_FIELD)
        self._words = [
            (len(w), frozenset(indexes), frozenset(roles)) for w, (indexes, roles) in words.items()
        ]
        # Leftmost-longest: ``secret_access_key`` wins over ``secret``, ``sk-ant-`` over ``sk-``;
        # non-overlapping matching is about twice as fast as reporting every overlap.
        self._automaton = AhoCorasick(list(words), matchkind=MatchKind.LeftmostLongest)

    @classmethod
    def off(cls) -> Redactor:
        """The identity redactor (mode ``off``)."""
        return cls("off")

    def is_secret_field(self, name: str) -> bool:
        """Whether a field of this name holds a secret (case/separator-insensitive)."""
        hit = self._field_cache.get(name)
        if hit is None:
            norm = normalize_field(name)
            hit = norm in self._fields or norm.endswith(SECRET_FIELD_SUFFIXES)
            if len(self._field_cache) < _FIELD_CACHE_MAX:
                self._field_cache[name] = hit
        return hit

    # -- text --------------------------------------------------------------------------------

    def redact_text(self, text: str) -> str:
        """``text`` with its secrets replaced; the same object when nothing was found."""
        if self.mode == "off" or text in self._clean:
            return text
        out = self._redact_text(text)
        if out is text:
            self._remember_clean(text)
        return out

    def redact_name(self, text: str | None) -> str | None:
        """An id, name or key (trace id, call id, file name, metadata key) with its secrets
        replaced, kept distinct from every other: a changed one ends in ``~`` and the first 8
        hex digits of the original's SHA-256, so two ids differing only in their secret stay
        two, and one id always becomes the same (a call still meets its result, a trace
        imported again is the same trace). The same object when nothing was found."""
        if text is None:
            return None
        out = self.redact_text(text)
        if out is text:
            return text
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        return f"{out}~{digest}"

    def _remember_clean(self, text: str) -> None:
        """Remember a text with nothing to redact: the same text comes again and again (a
        message's content is also in its raw payload, a call's arguments in three places, system
        prompts and tool outputs repeat across traces), and a lookup costs less than a scan.
        Bounded by characters held (the memo is dropped whole when full)."""
        if self._clean_chars + len(text) > _CLEAN_MEMO_CHARS:
            self._clean.clear()
            self._clean_chars = 0
        self._clean[text] = None
        self._clean_chars += len(text)

    def _redact_text(self, text: str) -> str:
        found, keys = self._scan(text)
        if not found and not keys and not self._rules:
            return text
        if text.lstrip()[:1] in ("{", "[") and text.rstrip()[-1:] in ("}", "]"):
            out = self._redact_embedded_json(text)
            if out is not None:
                return out
        out = self._redact_keys(text, keys) if keys else text
        for i, (det, rx) in enumerate(self._detectors):
            if i in found:
                out = rx.sub(partial(self._replace, det=det), out)
        for rule in self._rules:
            out = rule.pattern.sub(partial(self._replace_rule, rule=rule), out)
        return text if out == text else out

    def _scan(self, text: str) -> tuple[set[int], list[tuple[int, int, int]]]:
        """Detectors to run on ``text``, and its secret key words as (start, end, role)."""
        low = text.lower()
        if len(low) != len(text):
            # A few characters lowercase to two (``İ``); keep positions aligned with ``text``.
            low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
        found = set(self._always) if self._always and DIGIT_RUN.search(text) else set()
        keys: list[tuple[int, int, int]] = []
        for index, start, end in self._automaton.find_matches_as_indexes(low):
            _, indexes, roles = self._words[index]
            found |= indexes
            for role in roles:
                keys.append((start, end, role))
        return found, keys

    def _redact_keys(self, text: str, keys: list[tuple[int, int, int]]) -> str:
        """Replace the values assigned to secret key words (``KEY=value``, ``Header: value``)."""
        spans: list[tuple[int, int, str]] = []
        for start, end, role in sorted(keys):
            if role == _FIELD:
                m = FIELD_TAIL.match(text, end)
            else:
                line_start = text.rfind("\n", 0, start) + 1
                if HEADER_PREFIX.fullmatch(text, line_start, start) is None:
                    continue
                m = (COOKIE_TAIL if role == _COOKIE else HEADER_TAIL).match(text, end)
            if m is None:
                continue
            group = m.lastgroup or "secret"  # the value groups are the patterns' only groups
            value = m.group(group)
            if is_placeholder(value) or (spans and m.start(group) < spans[-1][1]):
                continue
            if group == "secret3" and not looks_like_credential(value):
                continue
            kind = self._field_kind(value)
            if (
                kind == SECRET_FIELD
                and text[max(0, start - 4) : start].lower().rstrip("_-").endswith("aws")
                and len(value) == 40
            ):
                kind = "aws_secret_key"
            spans.append((m.start(group), m.end(group), kind))
        if not spans:
            return text
        parts, pos = [], 0
        for start, end, kind in spans:
            self.counts[kind] += 1
            parts += [text[pos:start], f"[REDACTED:{kind}]"]
            pos = end
        parts.append(text[pos:])
        return "".join(parts)

    def _replace(self, m: re.Match[str], det: Detector) -> str:
        secret = m.group("secret") if "secret" in m.re.groupindex else None
        value = m.group(0) if secret is None else secret
        if det.check is not None and not det.check(value):
            return m.group(0)
        self.counts[det.kind] += 1
        return f"[REDACTED:{det.kind}]" if secret is None else _splice(m, "secret", det.kind)

    def _replace_rule(self, m: re.Match[str], rule: TeamRule) -> str:
        self.counts[rule.kind] += 1
        if "secret" in rule.pattern.groupindex and m.group("secret") is not None:
            return _splice(m, "secret", rule.kind)
        return f"[REDACTED:{rule.kind}]"

    def _redact_embedded_json(self, text: str) -> str | None:
        """Redact a string holding JSON as JSON; ``None`` when it does not parse."""
        try:
            parsed = exact_json.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(parsed, dict | list):
            return None
        out, changed = self._redact(parsed)
        if not changed:
            return text
        # Keep the source's layout where it is cheap to see: indented, spaced or compact.
        if "\n" in text.strip():
            return json.dumps(out, ensure_ascii=False, indent=2)
        spaced = '": ' in text or '", "' in text
        return json.dumps(
            out, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":")
        )

    # -- values ------------------------------------------------------------------------------

    def redact_value(self, value: Any) -> Any:
        """A JSON-like value (dict/list/str/scalars) with its secrets replaced, recursively.

        Values of secret-named fields are replaced whole by ``[REDACTED:secret_field]`` (or by
        the provider kind when the value is a known key); unchanged containers are returned as
        the same objects (no copy).
        """
        if self.mode == "off":
            return value
        return self._redact(value)[0]

    def redact_repeated(self, value: Any) -> Any:
        """:meth:`redact_value` for a value that comes again whole, trace after trace (tool
        definitions, trace metadata): one found clean before is known by its JSON and returned
        as it is, without walking it again. The JSON is only the memo's key: the remembered
        value must also equal this one (``==``, which tells a text from a number or a list from
        a dict), and a value orjson cannot write exactly is walked as always."""
        if self.mode == "off" or value is None or value.__class__ is str:
            return self.redact_value(value)
        try:
            key = orjson.dumps(value, option=_VALUE_KEY_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError: a type or text it does not write exactly
            return self.redact_value(value)
        seen = self._clean_values.get(key, _MISSING)
        if seen is not _MISSING and seen == value:
            return value
        out = self.redact_value(value)
        if out is value:
            if self._clean_values_bytes + len(key) > _CLEAN_VALUES_BYTES:
                self._clean_values.clear()
                self._clean_values_bytes = 0
            self._clean_values[key] = value
            self._clean_values_bytes += len(key)
        return out

    def _redact_item(self, key: Any, item: Any) -> tuple[Any, bool, Any]:
        """One item of a dict: its redacted value, whether that changed, its redacted key."""
        if isinstance(key, str) and self.is_secret_field(key) and _holds_secret(item):
            kind = self._field_kind(item)
            self.counts[kind] += 1
            return f"[REDACTED:{kind}]", True, self.redact_name(key)
        red, changed = self._redact(item)
        # A key holding a secret is replaced too, kept apart from the other keys.
        if not isinstance(key, str):
            return red, changed, key
        red_key = self.redact_name(key)
        if (
            red_key is key
            and not self.is_secret_field(key)
            and len(self._plain_keys) < _FIELD_CACHE_MAX
        ):
            # Neither a secret field's name nor holding one itself: later dicts with this key
            # skip both questions (:meth:`_redact`).
            self._plain_keys.add(key)
        return red, changed, red_key

    def _field_kind(self, value: Any) -> str:
        """A secret-named field's value that is a known key keeps that key's kind."""
        if isinstance(value, str):
            stripped = value.strip()
            for det, rx in self._providers:
                if rx.fullmatch(stripped) and (det.check is None or det.check(stripped)):
                    return det.kind
        return SECRET_FIELD

    def _redact(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, str):
            out = self.redact_text(value)
            return out, out is not value
        clean = self._clean
        if isinstance(value, dict):
            new: dict[Any, Any] | None = None
            plain = self._plain_keys
            for i, (key, item) in enumerate(value.items()):
                red: Any
                if key in plain:
                    # The common case: a key seen before (clean, not a secret field's name),
                    # holding a scalar or a text known to be clean (no call), or a container.
                    red_key = key
                    if item.__class__ in _UNREDACTED or (item.__class__ is str and item in clean):
                        red, changed = item, False
                    else:
                        red, changed = self._redact(item)
                else:
                    red, changed, red_key = self._redact_item(key, item)
                if (changed or red_key is not key) and new is None:
                    new = dict(list(value.items())[:i])
                if new is not None:
                    new[red_key] = red
            return (value, False) if new is None else (new, True)
        if isinstance(value, list | tuple):
            items: list[Any] | None = None
            for i, item in enumerate(value):
                if item.__class__ in _UNREDACTED or (item.__class__ is str and item in clean):
                    red, changed = item, False
                else:
                    red, changed = self._redact(item)
                if changed and items is None:
                    items = list(value[:i])
                if items is not None:
                    items.append(red)
            if items is None:
                return value, False
            return (tuple(items) if isinstance(value, tuple) else items), True
        return value, False


#: No remembered value (:meth:`Redactor.redact_repeated`).
_MISSING: Any = object()
#: Classes of values redaction leaves as they are (JSON's scalars but text).
_UNREDACTED: frozenset[type] = frozenset({int, float, bool, type(None)})


def _splice(m: re.Match[str], group: str, kind: str) -> str:
    """The match with only ``group`` replaced by the redaction label."""
    start, end = m.span(group)
    base, whole = m.start(), m.group(0)
    return f"{whole[: start - base]}[REDACTED:{kind}]{whole[end - base :]}"


def _holds_secret(value: Any) -> bool:
    """Whether a secret-named field's value is worth replacing (not empty, null or a flag)."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, str):
        return bool(value.strip()) and not is_placeholder(value)
    if isinstance(value, dict | list | tuple):
        return bool(value)
    return True
