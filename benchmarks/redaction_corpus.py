"""Seeded corpora for measuring ``ingest.redaction.secrets``: secrets in realistic places, and clean
text.

:func:`secret_corpus` yields :class:`Sample` s, each a JSON-like value as a trace carries it (tool
arguments as a JSON string, HTTP results with headers, env dumps, stack traces, shell commands,
config files) and the secret strings planted in it. Every key is random but of its provider's
shape (prefix, alphabet, length). :func:`pii_corpus` does the same for what only ``strict`` mode
redacts (e-mail, phone, card numbers). :func:`clean_corpus` yields values with no secret at all
but with everything that looks close: git SHAs, UUIDs, base64 images, tool call ids, message
ids, hashes, tau-bench style ids, words like "password reset succeeded".

The same seed always gives the same corpus.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"

DEFAULT_SEED = 20_261_201


@dataclass(frozen=True, slots=True)
class Sample:
    """A value as a trace carries it, the secrets planted in it and the kind planted."""

    kind: str
    place: str
    value: Any
    secrets: tuple[str, ...]


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = _b64url(b'{"alg":"RS256","typ":"JWT","kid":"' + _rand(rng, HEX, 8).encode() + b'"}')
    claims = {"sub": _rand(rng, ALNUM, 12), "iat": rng.randrange(1_600_000_000, 1_800_000_000)}
    payload = _b64url(json.dumps(claims).encode())
    return f"{header}.{payload}.{_b64url(rng.randbytes(256))}"


def _private_key(rng: random.Random) -> str:
    body = base64.b64encode(rng.randbytes(rng.choice((600, 1200)))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    label = rng.choice(("RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----"


def _password(rng: random.Random) -> str:
    return _rand(rng, ALNUM + "!*_-", rng.randrange(10, 24))


#: Secret generators per kind: a random value of the provider's shape.
KEYS: dict[str, Callable[[random.Random], str]] = {
    "openai_key": lambda r: r.choice(
        (
            "sk-" + _rand(r, ALNUM, 48),
            "sk-proj-" + _rand(r, URLSAFE, 156),
            "sk-svcacct-" + _rand(r, URLSAFE, 120),
        )
    ),
    "anthropic_key": lambda r: "sk-ant-api03-" + _rand(r, URLSAFE, 93) + "AA",
    "google_api_key": lambda r: "AIza" + _rand(r, URLSAFE, 35),
    "aws_access_key_id": lambda r: (
        r.choice(("AKIA", "ASIA")) + _rand(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    ),
    "github_token": lambda r: r.choice(
        (
            r.choice(("ghp_", "gho_", "ghs_", "ghu_", "ghr_")) + _rand(r, ALNUM, 36),
            "github_pat_" + _rand(r, ALNUM, 22) + "_" + _rand(r, ALNUM, 59),
        )
    ),
    "gitlab_token": lambda r: "glpat-" + _rand(r, URLSAFE, 20),
    "slack_token": lambda r: (
        f"xox{r.choice('bpars')}-{_rand(r, string.digits, 12)}-"
        f"{_rand(r, string.digits, 13)}-{_rand(r, ALNUM, 24)}"
    ),
    "stripe_key": lambda r: (
        r.choice(("sk_live_", "rk_live_", "pk_live_", "sk_test_"))
        + _rand(r, ALNUM, r.choice((24, 99)))
    ),
    "huggingface_token": lambda r: "hf_" + _rand(r, ALNUM, 34),
    "npm_token": lambda r: "npm_" + _rand(r, ALNUM, 36),
    "sendgrid_key": lambda r: f"SG.{_rand(r, URLSAFE, 22)}.{_rand(r, URLSAFE, 43)}",
    "jwt": _jwt,
}


def _place(rng: random.Random, kind: str, key: str) -> tuple[str, Any]:
    """Put a provider key somewhere a trace would carry it."""
    env = kind.split("_")[0].upper()
    places: list[tuple[str, Any]] = [
        ("env_dump", f"PATH=/usr/bin:/bin\nHOME=/home/dev\n{env}_API_KEY={key}\nLANG=C.UTF-8\n"),
        (
            "tool_args_json",
            {
                "name": "http_request",
                "arguments": json.dumps({"url": "https://api.example.com/v1", "token": key}),
            },
        ),
        (
            "shell_command",
            {"command": f"curl -s https://api.example.com/v1/models -H 'X-Key: {key}'"},
        ),
        (
            "stack_trace",
            'Traceback (most recent call last):\n  File "/app/client.py", line 42, in call\n'
            f'    client = Client(key="{key}")\nValueError: invalid credentials for {key}',
        ),
        ("config_file", f"[default]\nregion = us-east-1\nkey_value = {key}\n"),
        ("prose", f"I found the key {key} in the repository's .env file; rotate it."),
    ]
    return rng.choice(places)


def secret_corpus(n: int = 600, seed: int = DEFAULT_SEED) -> Iterator[Sample]:
    """``n`` samples cycling through every secret kind and place (deterministic for ``seed``)."""
    rng = random.Random(seed)
    kinds = [*KEYS, "bearer_token", "aws_secret_key", "private_key", "url_password", "secret_field"]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind in KEYS:
            key = KEYS[kind](rng)
            place, value = _place(rng, kind, key)
            yield Sample(kind, place, value, (key,))
        elif kind == "bearer_token":
            tok = rng.choice(("ya29.", "")) + _rand(rng, URLSAFE + ".~", rng.randrange(24, 80))
            place, value = rng.choice(
                [
                    (
                        "http_headers",
                        {
                            "status": 200,
                            "request_headers": f"GET /v1 HTTP/1.1\nAuthorization: Bearer {tok}\n",
                        },
                    ),
                    (
                        "shell_command",
                        f'curl -H "Authorization: Bearer {tok}" https://api.example.com',
                    ),
                    (
                        "tool_result_json",
                        json.dumps({"headers": {"X-Forwarded": f"Bearer {tok}"}, "ok": True}),
                    ),
                ]
            )
            yield Sample(kind, place, value, (tok,))
        elif kind == "aws_secret_key":
            key_id = KEYS["aws_access_key_id"](rng)
            secret = _rand(rng, ALNUM + "/+", 40)
            place, value = rng.choice(
                [
                    (
                        "credentials_file",
                        f"[default]\naws_access_key_id = {key_id}\n"
                        f"aws_secret_access_key = {secret}\n",
                    ),
                    ("env_dump", f"AWS_ACCESS_KEY_ID={key_id}\nAWS_SECRET_ACCESS_KEY={secret}\n"),
                    (
                        "tool_args_json",
                        {
                            "arguments": json.dumps(
                                {"AWS_SECRET_ACCESS_KEY": secret, "AWS_ACCESS_KEY_ID": key_id}
                            )
                        },
                    ),
                ]
            )
            yield Sample(kind, place, value, (key_id, secret))
        elif kind == "private_key":
            pem = _private_key(rng)
            place, value = rng.choice(
                [
                    (
                        "file_read_result",
                        {"type": "tool_result", "content": f"$ cat id_rsa\n{pem}\n"},
                    ),
                    (
                        "tool_args_json",
                        {"arguments": json.dumps({"path": "deploy.pem", "content": pem})},
                    ),
                ]
            )
            # Any full base64 line of the body left in the output is a leak.
            yield Sample(kind, place, value, tuple(pem.splitlines()[1:-1]))
        elif kind == "url_password":
            user, pw = rng.choice(("app", "admin", "postgres", "deploy")), _password(rng)
            scheme = rng.choice(("postgresql", "mysql", "redis", "amqp", "https", "mongodb+srv"))
            url = f"{scheme}://{user}:{pw}@db-{rng.randrange(9)}.internal.example.com:5432/prod"
            place, value = rng.choice(
                [
                    (
                        "stack_trace",
                        f"sqlalchemy.exc.OperationalError: could not connect to {url}\n"
                        f"  (Background on this error at: https://sqlalche.me/e/20/e3q8)",
                    ),
                    ("env_dump", f"DATABASE_URL={url}\nDEBUG=0\n"),
                    (
                        "tool_args_json",
                        {"arguments": json.dumps({"dsn": url, "query": "select 1"})},
                    ),
                ]
            )
            yield Sample(kind, place, value, (pw,))
        else:
            pw = _password(rng)
            field = rng.choice(
                (
                    "password",
                    "Password",
                    "db_password",
                    "client_secret",
                    "API_KEY",
                    "x-api-key",
                    "refreshToken",
                    "Set-Cookie",
                )
            )
            place, value = rng.choice(
                [
                    ("tool_args_json", {"arguments": json.dumps({"username": "ops", field: pw})}),
                    ("tool_args_dict", {"input": {"user": "ops", field: pw, "remember": True}}),
                    ("env_dump", f"USER=ops\n{field.upper().replace('-', '_')}={pw}\n"),
                    ("python_repr", f"connect(**{{'host': 'db', '{field}': '{pw}'}})"),
                    ("yaml_config", f'database:\n  host: db\n  {field}: "{pw}"\n'),
                ]
            )
            yield Sample(kind, place, value, (pw,))


def pii_corpus(n: int = 150, seed: int = DEFAULT_SEED) -> Iterator[Sample]:
    """E-mail addresses, phone numbers and Luhn-valid card numbers in tool results."""
    rng = random.Random(seed + 1)
    for i in range(n):
        kind = ("email", "phone", "card_number")[i % 3]
        if kind == "email":
            pii = (
                f"{_rand(rng, string.ascii_lowercase, 6)}.{_rand(rng, string.ascii_lowercase, 5)}"
                f"@{rng.choice(('example.com', 'mail.co.uk', 'corp.io'))}"
            )
        elif kind == "phone":
            pii = rng.choice(
                (
                    f"+1 {rng.randrange(200, 999)} {rng.randrange(200, 999)}"
                    f" {rng.randrange(1000, 9999)}",
                    f"+44{rng.randrange(7000000000, 7999999999)}",
                    f"({rng.randrange(200, 999)}) {rng.randrange(200, 999)}"
                    f"-{rng.randrange(1000, 9999)}",
                    f"+49 30 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}",
                )
            )
        else:
            digits = [
                int(c)
                for c in rng.choice(("4", "51", "37", "6011")) + _rand(rng, string.digits, 10)
            ]
            digits += [0] * (15 - len(digits))
            check = sum(
                d if i % 2 else (d * 2 - 9 if d * 2 > 9 else d * 2)
                for i, d in enumerate(reversed(digits))
            )
            pan = "".join(map(str, digits)) + str((10 - check % 10) % 10)
            pii = rng.choice((pan, " ".join(pan[i : i + 4] for i in range(0, 16, 4))))
        value = json.dumps(
            {"customer": {"name": "Ana Lima", "contact": pii, "since": "2021-04-03"}}
        )
        yield Sample(kind, "tool_result_json", value, (pii,))


def clean_corpus(n: int = 600, seed: int = DEFAULT_SEED) -> Iterator[Sample]:
    """``n`` values with no secret and no PII, full of near misses."""
    rng = random.Random(seed + 2)
    makers: list[Callable[[], Any]] = [
        lambda: (
            f"commit {_rand(rng, HEX, 40)}\nAuthor: CI Bot\n\n"
            f"    fix: retry on 429 ({_rand(rng, HEX, 7)})"
        ),
        lambda: {
            "id": f"call_{_rand(rng, ALNUM, 24)}",
            "type": "function",
            "function": {
                "name": "get_user_details",
                "arguments": json.dumps(
                    {
                        "user_id": f"{rng.choice(('mia_li', 'omar_rossi'))}"
                        f"_{rng.randrange(1000, 9999)}"
                    }
                ),
            },
        },
        lambda: {
            "type": "tool_use",
            "id": f"toolu_01{_rand(rng, ALNUM, 22)}",
            "name": "Bash",
            "input": {"command": "git log --oneline | head -5"},
        },
        lambda: {
            "id": f"msg_01{_rand(rng, ALNUM, 22)}",
            "uuid": "-".join(_rand(rng, HEX, k) for k in (8, 4, 4, 4, 12)),
        },
        lambda: f"data:image/png;base64,{base64.b64encode(rng.randbytes(600)).decode()}",
        lambda: {
            "sha256": _rand(rng, HEX, 64),
            "digest": f"sha256:{_rand(rng, HEX, 64)}",
            "etag": f'"{_rand(rng, HEX, 32)}"',
        },
        lambda: json.dumps(
            {
                "reservation_id": _rand(rng, UPPER_DIGITS, 6),
                "payment_id": f"credit_card_{rng.randrange(1000000, 9999999)}",
                "status": "confirmed",
            }
        ),
        lambda: rng.choice(
            (
                "Password reset succeeded.",
                "Enter your password to continue",
                "the api_key parameter is required",
                "Token budget exceeded: 2048 tokens",
                "secret santa list updated",
            )
        ),
        lambda: {
            "max_tokens": 1024,
            "next_token": _rand(rng, ALNUM, 20),
            "password": None,
            "api_key": "",
            "has_secret": False,
        },
        lambda: (
            'api_key = os.environ["OPENAI_API_KEY"]\n'
            "password = getenv('DB_PASSWORD')\ntoken = ${GITHUB_TOKEN}"
        ),
        lambda: (
            f"See https://github.com/acme/tool/blob/{_rand(rng, HEX, 40)}/src/app.py"
            f"#L{rng.randrange(1, 500)}"
            f" and http://localhost:{rng.randrange(3000, 9000)}/health"
        ),
        lambda: {
            "chatcmpl": f"chatcmpl-{_rand(rng, ALNUM, 29)}",
            "created": rng.randrange(1_700_000_000_000, 1_800_000_000_000),
            "model": "gpt-4o-2024-08-06",
        },
        lambda: (
            f"{rng.randrange(2020, 2026)}-0{rng.randrange(1, 9)}-1{rng.randrange(0, 9)}"
            f"T12:0{rng.randrange(9)}:00Z INFO task-management-{_rand(rng, string.digits, 6)}"
            f" done in {rng.randrange(10, 999)} ms"
        ),
        lambda: (
            f"pip install scikit-learn=={rng.randrange(1, 2)}.{rng.randrange(0, 6)}"
            f".{rng.randrange(0, 9)}  # sk-learn-compatible-estimators"
        ),
        lambda: {"signature": base64.b64encode(rng.randbytes(300)).decode(), "type": "thinking"},
    ]
    for i in range(n):
        yield Sample("clean", f"clean_{i % len(makers)}", makers[i % len(makers)](), ())
