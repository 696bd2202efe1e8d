"""Scenarios about errors and advice: every error type through every channel, and suggestions
that the model follows, ignores, leaves unclear or never gets to act on.

Error channels (see ``ingest.scenarios.agent.Channel``): *text* catalogues go to formats without
an error flag in use (OpenAI, Anthropic without ``is_error``), *flagged* catalogues to the
formats that have one (Anthropic ``is_error``, LangChain ``status``), *protocol* catalogues to the
formats whose result carries no contradicting status (OpenAI, Anthropic).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import Any

from ingest.scenarios.agent import Conversation, Outcome, flagged_error, protocol, text_error
from ingest.scenarios.cases_flow import CITIES, ROUTES, USERS, Builder, start, trip_date

_USER_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "tools/users.py", line 27, in get_user\n'
    "    return PROFILES[record['id']]\n"
    "KeyError: 'id'"
)
_SEARCH = {"origin": "CDG", "destination": "JFK", "date": "2025-05-02"}

#: One failing call per error type: (error_type, tool, arguments, error text, protocol summary).
ERROR_CASES: tuple[tuple[str, str, dict[str, Any], str, str], ...] = (
    ("rate_limit", "get_weather", {"city": "Lyon"}, "Error: 429 Too Many Requests",
     "Weather lookups are rate limited for this key."),
    ("timeout", "run_sql", {"query": "SELECT * FROM bookings"}, "Request timed out after 30s",
     "The query ran longer than 30 seconds."),
    ("unavailable", "search_flights", _SEARCH, "HTTP 503 Service Unavailable",
     "The flight search backend is down."),
    ("auth", "get_user", {"user_id": "u_2001"}, "401 Unauthorized",
     "The session token was rejected."),
    ("not_found", "book_flight", {"flight_id": "XY123", "user_id": "u_1042"},
     "Error: flight XY123 not found", "Flight XY123 does not exist."),
    ("invalid_params", "search_flights", {**_SEARCH, "date": "next friday"},
     "Error: validation failed for parameter 'date': expected YYYY-MM-DD",
     "The date must look like YYYY-MM-DD."),
    ("invalid_arguments_json", "run_sql", {"query": "SELECT 1"},
     "Error: could not parse arguments as JSON", "The arguments were not valid JSON."),
    ("unknown_tool", "fly", {"to": "Rome"}, "Error: unknown tool 'fly'",
     "There is no tool called fly."),
    ("tool_exception", "get_user", {"user_id": "u_3310"}, _USER_TRACEBACK,
     "The profile lookup crashed."),
    ("conflict", "book_flight", {"flight_id": "AF1234", "user_id": "u_1042"},
     "409 Conflict: seat already taken", "Seat 14C is already taken."),
    ("quota", "search_flights", {**_SEARCH, "destination": "YUL"},
     "Error: quota exceeded for this month", "The monthly search quota is used up."),
    ("content_filter", "read_file", {"path": "notes/private.md"},
     "Error: content blocked by safety filter", "The file was blocked by the safety filter."),
    ("other", "get_weather", {"city": "Atlantis"}, "Error: something went wrong",
     "Something unexpected happened."),
)  # fmt: skip
#: Protocol-only: a provided error type outside the taxonomy is kept verbatim.
_VERBATIM = ("payment_declined", "book_flight", {"flight_id": "LH4410", "user_id": "u_7788"},
             "", "The card on file was declined.")  # fmt: skip
#: Flag-only: text that reads as a success without the explicit flag.
_FLAG_ONLY = ("other", "get_weather", {"city": "Reykjavik"}, "The seat map could not be loaded.",
              "")  # fmt: skip
_GROUPS = ((0, 4), (4, 7), (7, 10), (10, 14))


def _catalogue(channel: str, number: int) -> Builder:
    """A trace of three or four failing calls of one channel (``text``/``flagged``/
    ``protocol``); the four numbers together cover every error type."""
    cases = list(ERROR_CASES)
    cases.append(_FLAG_ONLY if channel == "flagged" else _VERBATIM)
    if channel == "text":
        cases.pop()  # the text channel has exactly the 13 taxonomy texts
    low, high = _GROUPS[number - 1]
    chosen = cases[low:high]
    formats = ("anthropic", "langchain") if channel == "flagged" else ("openai_chat", "anthropic")

    def build(rng: random.Random) -> Conversation:
        conv = start(
            f"{channel}_errors_{number}",
            "errors",
            rng,
            "Help me plan a trip: weather, flights, my profile and bookings.",
            formats,
        )
        conv.group = f"errors:{channel}"
        for error_type, tool, args, text, summary in chosen:
            outcome: Outcome
            if channel == "protocol":
                outcome = protocol("error", summary, error_type=error_type)
            elif channel == "flagged":
                outcome = flagged_error(text, error_type, explicit_only=(text == _FLAG_ONLY[3]))
            else:
                outcome = text_error(text, error_type)
            conv.result(conv.call(tool, dict(args)), outcome)
        conv.say("I'm sorry, several services failed. Please try again later.")
        return conv

    return build


# --- suggestions -----------------------------------------------------------------------------


def _retry_after(verdict: str) -> Builder:
    def build(rng: random.Random) -> Conversation:
        city = rng.choice(CITIES)
        conv = start(f"retry_after_{verdict}", "suggestions", rng, f"Weather in {city}?")
        args = {"city": city}
        hint = text_error(
            "Error: 429 Too Many Requests; retry after 6s", "rate_limit", suggestion=True
        )
        conv.result(conv.call("get_weather", args), hint, verdict=verdict)
        # Followed: the retry comes 8 s after the advice (>= 6 s); ignored: 1 s after.
        conv.wait(8 if verdict == "followed" else 1)
        retry = conv.call("get_weather", args)
        if verdict == "followed":
            conv.answer(retry)
            conv.say(f"Here is the weather in {city}.")
        else:
            conv.result(retry, text_error("Error: 429 Too Many Requests", "rate_limit"))
            conv.say("Sorry, the weather service is busy right now.")
        return conv

    return build


def _advised_booking(name: str, verdict: str, advice: Outcome, again: Outcome) -> Builder:
    """Booking flight XY123 fails with ``advice``: followed, the agent searches and books a
    flight that exists; ignored, it books XY123 again, which fails with ``again``."""

    def build(rng: random.Random) -> Conversation:
        user, (origin, dest), date = rng.choice(USERS), rng.choice(ROUTES), trip_date(rng)
        conv = start(f"{name}_{verdict}", "suggestions", rng, f"Book XY123 for {user}.")
        args = {"flight_id": "XY123", "user_id": user}
        conv.result(conv.call("book_flight", args), advice, verdict=verdict)
        if verdict == "followed":
            _search_then_book(conv, user, origin, dest, date)
        else:
            conv.result(conv.call("book_flight", args), again)
            conv.say("Sorry, I could not book flight XY123.")
        return conv

    return build


#: The advice in the error's text: search instead.
_use_instead = partial(
    _advised_booking,
    "use_instead",
    advice=text_error(
        "Error: flight XY123 not found; use search_flights instead", "not_found", suggestion=True
    ),
    again=text_error("Error: flight XY123 not found", "not_found"),
)


def _search_then_book(conv: Conversation, user: str, origin: str, dest: str, date: str) -> None:
    conv.answer(conv.call("search_flights", {"origin": origin, "destination": dest, "date": date}))
    conv.answer(conv.call("book_flight", {"flight_id": "AF1234", "user_id": user}))
    conv.say("XY123 does not exist, so I booked AF1234 on the same route.")


def _missing_param(verdict: str) -> Builder:
    def build(rng: random.Random) -> Conversation:
        (origin, dest), date = rng.choice(ROUTES), trip_date(rng)
        conv = start(f"missing_param_{verdict}", "suggestions", rng, f"Flights {origin}-{dest}?")
        args = {"origin": origin, "destination": dest}
        hint = text_error(
            "Error: missing required parameter 'date'", "invalid_params", suggestion=True
        )
        conv.result(conv.call("search_flights", args), hint, verdict=verdict)
        if verdict == "followed":
            conv.answer(conv.call("search_flights", {**args, "date": date}))
            conv.say(f"Here are flights on {date}.")
        else:
            # The identical call fails the same way and the run stops (max steps).
            conv.result(conv.call("search_flights", args), hint, verdict="no_next_action")
        return conv

    return build


def _ask_user(verdict: str) -> Builder:
    def build(rng: random.Random) -> Conversation:
        conv = start(f"ask_user_{verdict}", "suggestions", rng, "Show my profile.")
        args = {"user_id": "me"}
        hint = text_error(
            "Error: user 'me' not found; ask the user for their user id",
            "not_found",
            suggestion=True,
        )
        conv.result(conv.call("get_user", args), hint, verdict=verdict)
        if verdict == "followed":
            conv.say("Could you tell me your user id?")
            user = rng.choice(USERS)
            conv.user(f"It's {user}.")
            conv.answer(conv.call("get_user", {"user_id": user}))
            conv.say("Here is your profile.")
        else:
            conv.result(
                conv.call("get_user", args), text_error("Error: user 'me' not found", "not_found")
            )
            conv.say("Sorry, I could not find your profile.")
        return conv

    return build


#: The advice in the Tool Message protocol's ``suggestion`` field.
_protocol_advice = partial(
    _advised_booking,
    "protocol",
    advice=protocol(
        "error",
        "Flight XY123 does not exist.",
        error_type="not_found",
        suggestion="Call search_flights to find a valid flight id, then book that one.",
    ),
    again=protocol("error", "Flight XY123 does not exist.", error_type="not_found"),
)


def advice_at_end(rng: random.Random) -> Conversation:
    """The trace ends right after an error with advice: ``no_next_action``."""
    city = rng.choice(CITIES)
    conv = start("advice_at_end", "suggestions", rng, f"Weather in {city}?")
    hint = text_error(
        "HTTP 503 Service Unavailable; retry after 30s", "unavailable", suggestion=True
    )
    conv.result(conv.call("get_weather", {"city": city}), hint, verdict="no_next_action")
    return conv


def advice_unclear(rng: random.Random) -> Conversation:
    """Free-form advice, and a next call that neither follows nor contradicts it."""
    user, city = rng.choice(USERS), rng.choice(CITIES)
    conv = start("advice_unclear", "suggestions", rng, f"Profile {user} and weather in {city}.")
    advice = protocol(
        "error",
        "The session token expired.",
        error_type="auth",
        suggestion="Check the account settings before continuing.",
    )
    conv.result(conv.call("get_user", {"user_id": user}), advice, verdict="unclear")
    conv.answer(conv.call("get_weather", {"city": city}))
    conv.say(f"I could not open the profile; here is the weather in {city}.")
    return conv


def claimed_success(rng: random.Random) -> Conversation:
    """Right after an error with advice, the model tells the user it worked: ``ignored``."""
    user = rng.choice(USERS)
    conv = start("claimed_success", "suggestions", rng, f"Book AF1234 for {user}.")
    hint = text_error(
        "HTTP 503 Service Unavailable; retry after 30s", "unavailable", suggestion=True
    )
    conv.result(
        conv.call("book_flight", {"flight_id": "AF1234", "user_id": user}), hint, verdict="ignored"
    )
    conv.say("Your flight AF1234 has been booked successfully!")
    return conv


def _pair(factory: Callable[[str], Builder]) -> tuple[Builder, Builder]:
    return factory("followed"), factory("ignored")


ERRORS: tuple[Builder, ...] = tuple(
    _catalogue(channel, number)
    for channel in ("text", "protocol", "flagged")
    for number in range(1, len(_GROUPS) + 1)
)
SUGGESTIONS: tuple[Builder, ...] = (
    *_pair(_retry_after), *_pair(_use_instead), *_pair(_missing_param), *_pair(_ask_user),
    *_pair(_protocol_advice), advice_at_end, advice_unclear, claimed_success,
)  # fmt: skip
