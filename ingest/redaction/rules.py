"""The secret detectors of ``ingest.redaction.secrets``: named patterns, secret field names, team
rules.

Each :class:`Detector` is a regex with a kind (the label in ``[REDACTED:kind]``) and ``anchors``:
lowercase literals one of which every text it matches contains (``sk-`` for OpenAI keys,
``://`` for passwords in URLs). The redactor finds all anchors of a text in one Aho-Corasick pass
and runs only the detectors whose anchors occur, so a text without any candidate costs one scan.
A detector without anchors (the strict-mode phone and card patterns: digits are everywhere) runs
on every text with a :data:`DIGIT_RUN`, which both need. Secret key words (:data:`FIELD_WORDS`,
:data:`HEADER_WORDS`, :data:`COOKIE_WORDS`) are found by the same pass; the value after each is
read with :data:`FIELD_TAIL` / :data:`HEADER_TAIL` / :data:`COOKIE_TAIL` at that place.

Team rules files are TOML (shape in ``ingest.redaction.secrets``); :func:`load_rules` reads them.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

MODES: Final[tuple[str, ...]] = ("off", "default", "strict")

#: Kind given to the whole value of a secret-named field (JSON and text assignments alike).
SECRET_FIELD: Final = "secret_field"

#: Field names (normalized: lowercase, without ``-``, ``_``, ``.`` and spaces) whose values are
#: secrets, matched exactly.
SECRET_FIELDS: Final[frozenset[str]] = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "secret",
        "apikey",
        "xapikey",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "sessiontoken",
        "authtoken",
        "xauthtoken",
        "bearertoken",
        "authorization",
        "proxyauthorization",
        "clientsecret",
        "privatekey",
        "secretkey",
        "secretaccesskey",
        "cookie",
        "setcookie",
    }
)
#: Normalized suffixes that make a field secret too (``OPENAI_API_KEY``, ``db_password``,
#: ``aws_secret_access_key``); ``token`` alone is not one: ``max_tokens``, ``next_token`` and
#: ``page_token`` are counts and cursors.
SECRET_FIELD_SUFFIXES: Final[tuple[str, ...]] = (
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesstoken",
    "refreshtoken",
    "authtoken",
    "sessiontoken",
    "privatekey",
    "secretkey",
    "secretaccesskey",
)

_KEY_SEPARATORS = re.compile(r"[-_. ]")

#: Values of secret-named assignments in text that are placeholders, not secrets.
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\**|x+|\.+|<[^>]*>|\$\{?[\w.]+\}?|%\(?\w+\)?s?|\{\{?[^}]*\}\}?|none|null|nil|"
    r"true|false|undefined|changeme|required|optional|string|redacted|\[redacted[^\]]*\]|"
    r"os\.environ.*|getenv.*|process\.env.*|env\..*)$"
)


def normalize_field(name: str) -> str:
    """The comparable form of a field name: lowercase, without ``-``, ``_``, ``.`` and spaces."""
    return _KEY_SEPARATORS.sub("", name.lower())


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn checksum (payment card numbers do)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _card_ok(s: str) -> bool:
    digits = "".join(c for c in s if c.isdigit())
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def is_placeholder(value: str) -> bool:
    """Whether a secret field's value is a stand-in (``***``, ``${DB_PASSWORD}``, ``None``)."""
    return "[REDACTED:" in value or _PLACEHOLDER.match(value.strip()) is not None


def looks_like_credential(value: str) -> bool:
    """Whether a bare (unquoted) value looks like a credential, not a word of prose.

    8+ characters with a digit, an inner capital or a symbol: ``hunter2hunter``, ``dXNlcjpw``,
    not ``required`` or ``Nobody``.
    """
    if len(value) < 8:
        return False
    return any(c.isdigit() or not c.isalnum() for c in value) or any(c.isupper() for c in value[1:])


def _not_placeholder(s: str) -> bool:
    return not is_placeholder(s)


def _phone_ok(s: str) -> bool:
    return 8 <= sum(c.isdigit() for c in s) <= 15


@dataclass(frozen=True, slots=True)
class Detector:
    """A named secret pattern.

    ``pattern`` is a regex source; when it has a named group ``secret`` only that group is
    replaced (``Bearer [REDACTED:bearer_token]``), otherwise the whole match. ``check`` (on the
    replaced text) can veto a match, e.g. the Luhn test for card numbers.
    """

    kind: str
    pattern: str
    anchors: tuple[str, ...]
    check: Callable[[str], bool] | None = None
    strict_only: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern (``re`` caches compiled patterns, so this is cheap)."""
        return re.compile(self.pattern)


# A key's body: letters, digits and the usual separators (so a match never runs into text).
_B = r"(?![A-Za-z0-9_-])"
#: Secret key words in text, lowercase: a key that ends in one of them (``DB_PASSWORD=``,
#: ``"refreshToken":``, ``aws_secret_access_key =``) has a secret value; ``password_hint`` does
#: not (the word must end at a word boundary).
FIELD_WORDS: Final[tuple[str, ...]] = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    *(
        f"{a}{sep}{b}"
        for a, b in (("api", "key"), ("private", "key"), ("secret", "key"))
        for sep in ("", "_", "-", " ", ".")
    ),
    *(f"secret{s}access{s}key" for s in ("", "_", "-")),
    *(
        f"{a}{s}token"
        for a in ("access", "refresh", "auth", "session", "id", "bearer")
        for s in ("", "_", "-")
    ),
)
#: Credential-carrying HTTP headers, lowercase; ``proxy-`` and ``set-`` prefixes included.
HEADER_WORDS: Final[tuple[str, ...]] = ("authorization", "x-api-key", "x-auth-token")
COOKIE_WORDS: Final[tuple[str, ...]] = ("cookie",)
#: What may stand on a header's line before its name: indentation, curl's ``-H "``, a prefix.
HEADER_PREFIX: Final = re.compile(r"(?i)[ \t]*(?:-H[ \t]*)?[\"']?(?:proxy-|set-)?")
#: After a secret key word: the assigned value (quoted: up to the quote, also JSON-escaped
#: quotes of JSON inside a JSON string; bare: a token-like run of 6+ characters, stopping at
#: code punctuation so ``os.environ[...]`` is not taken).
FIELD_TAIL: Final = re.compile(
    r"\b\\?[\"']?[ \t]*[:=][ \t]*(?:\\?\"(?P<secret>[^\"\n\\]{4,})\\?\"|"
    r"'(?P<secret2>[^'\n\\]{4,})'|(?P<secret3>[^\s\"',;&)}\]<>(\[\\]{6,}))"
)
#: After a credential header name at the start of a line: an optional scheme word and the
#: credential (a ``Bearer`` token is left to its own detector, which keeps the scheme word). A
#: credential already redacted after its scheme word (``Basic [REDACTED:…]``) ends the match: the
#: scheme word is not taken for the credential on a second pass.
HEADER_TAIL: Final = re.compile(
    r"[ \t]*:[ \t]*(?!(?i:bearer)\s)(?![A-Za-z][\w-]* \[REDACTED:)"
    r"(?:[A-Za-z][\w-]* )?(?P<secret>[A-Za-z0-9._~+/=:-]{8,})(?=[\s\"']|$)"
)
#: After ``Cookie:`` / ``Set-Cookie:`` at the start of a line: ``name=value…`` to the line's end.
COOKIE_TAIL: Final = re.compile(r"[ \t]*:[ \t]*(?P<secret>[^\s=;\"']+=[^\r\n\"']+)")

#: 8+ digits with separators between: every phone and card number holds one. Checking for it
#: first skips the two (slower) patterns on 87 % of the real traces' strings.
DIGIT_RUN: Final = re.compile(r"\d[\d ()./-]{6,}\d")

#: The built-in detectors, in the order they run: provider keys before the secret-named
#: assignments, so ``OPENAI_API_KEY=sk-…`` is labelled ``openai_key``; what an earlier detector
#: replaced (``[REDACTED:…]``) is never matched again.
DETECTORS: Final[tuple[Detector, ...]] = (
    Detector(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ("private key-----",),
    ),
    Detector(
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{8,}" + _B,
        ("eyj",),
    ),
    Detector(
        "bearer_token",
        r"\b(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)(?![A-Za-z0-9._~+/=-])",
        ("bearer",),
        _has_digit,
    ),
    Detector("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}" + _B, ("sk-ant-",)),
    Detector(
        "openai_key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}" + _B,
        ("sk-",),
        _has_digit,
    ),
    Detector("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}" + _B, ("aiza",)),
    Detector(
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        ("akia", "asia", "abia", "acca"),
    ),
    Detector(
        "aws_secret_key",
        r"(?i:aws[-_]?secret(?:[-_]?access)?[-_]?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        ("secret",),
    ),
    Detector(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Detector("gitlab_token", r"\bglpat-[A-Za-z0-9_-]{20,}" + _B, ("glpat-",)),
    Detector(
        "slack_token",
        r"\bxox[abprs]-[A-Za-z0-9-]{10,}" + _B,
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
        _has_digit,
    ),
    Detector(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}",
        ("hooks.slack.com",),
    ),
    Detector(
        "stripe_key",
        r"\b(?:(?:sk|rk|pk)_live|(?:sk|rk)_test)_[A-Za-z0-9]{16,}\b",
        ("_live_", "_test_"),
    ),
    Detector("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b", ("hf_",), _has_digit),
    Detector("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
    Detector("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _B, ("sg.",)),
    Detector("pypi_token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}" + _B, ("pypi-age",)),
    Detector("groq_key", r"\bgsk_[A-Za-z0-9]{48,}\b", ("gsk_",)),
    Detector(
        "url_password",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\"'<>\[\]]*:"
        r"(?P<secret>[^\s/?#@\"'<>\[\]]+)@(?=[A-Za-z0-9\[])",
        ("://",),
        _not_placeholder,
    ),
    Detector(
        "email",
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
        ("@",),
        strict_only=True,
    ),
    Detector(
        "card_number",
        r"\b[2-6]\d{3}(?:[ -]?\d{4}){2}[ -]?\d{1,7}\b",
        (),
        _card_ok,
        strict_only=True,
    ),
    Detector(
        "phone",
        # E.164 (+ country code, 8-15 digits, optionally grouped) or a national number with
        # separators: (555) 123-4567, 555-123-4567, 030 1234 5678. Bare digit runs are ids, and
        # a group inside a longer dashed run (ORCID 0009-0007-5432-9169) is not a number.
        r"(?<![\w+.-])(?:\+[1-9]\d{0,2}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}"
        r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\b\d{3}[.-]\d{3}[.-]\d{4}"
        r"|\b0\d{2,4}[ /-]\d{3,4}[ -]?\d{3,4})(?![\w-])",
        (),
        _phone_ok,
        strict_only=True,
    ),
)


@dataclass(frozen=True, slots=True)
class TeamRule:
    """A rule from a team rules file: its kind, compiled regex and the modes it applies in."""

    kind: str
    pattern: re.Pattern[str]
    strict_only: bool = False


class RulesFileError(ValueError):
    """A team rules file is not the documented TOML shape; the message names file and rule."""


def load_rules(path: str | Path) -> tuple[list[TeamRule], list[str]]:
    """Read a team rules file (shape in the module docstring): its rules and extra field names."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RulesFileError(f"{path}: not valid TOML: {exc}") from exc
    fields = data.get("secret_fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise RulesFileError(f"{path}: secret_fields must be a list of strings")
    rules: list[TeamRule] = []
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise RulesFileError(f"{path}: [[rules]] must be an array of tables")
    for i, raw in enumerate(raw_rules, 1):
        where = f"{path}: rule {i}"
        if not isinstance(raw, dict):
            raise RulesFileError(f"{where}: not a table")
        kind = raw.get("kind", raw.get("name"))
        regex = raw.get("regex")
        if not isinstance(kind, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", kind):
            raise RulesFileError(f"{where}: 'kind' must be a word (letters, digits, _ . -)")
        if not isinstance(regex, str) or not regex:
            raise RulesFileError(f"{where} ({kind}): 'regex' must be a non-empty string")
        mode = raw.get("mode", "default")
        if mode not in ("default", "strict"):
            raise RulesFileError(f"{where} ({kind}): 'mode' must be 'default' or 'strict'")
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise RulesFileError(f"{where} ({kind}): bad regex: {exc}") from exc
        rules.append(TeamRule(kind, pattern, strict_only=mode == "strict"))
    return rules, list(fields)
