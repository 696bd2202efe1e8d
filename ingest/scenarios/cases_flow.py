"""Scenarios about the flow of calls and results: clean runs, pairing edge cases, loops, and
content edge cases (oversized, bare, traceback, unparsable arguments, schema violations).

Each function builds one conversation from a seeded ``random.Random``; the expected facts of
every result are stated where it is added (see ``ingest.scenarios.agent``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import orjson

from ingest.scenarios.agent import (
    FORMATS,
    Conversation,
    flight_list,
    guide_dump,
    ok,
    protocol,
    text_error,
)

SYSTEM_PROMPT = (
    "You are TravelBot, a travel assistant. Use the tools to look things up; never invent "
    "flight ids or user ids."
)
CITIES = ("Paris", "Tokyo", "Lima", "Oslo", "Nairobi", "Montreal", "Seoul", "Lisbon")
ROUTES = (("CDG", "JFK"), ("LHR", "NRT"), ("FRA", "GRU"), ("AMS", "CPT"), ("OSL", "KEF"))
USERS = ("u_1042", "u_2001", "u_3310", "u_7788")

Builder = Callable[[random.Random], Conversation]


def start(
    name: str, category: str, rng: random.Random, request: str,
    formats: tuple[str, ...] = FORMATS,
) -> Conversation:  # fmt: skip
    """A conversation opened by the system prompt and the user's request."""
    conv = Conversation(name, category, rng, formats)
    conv.system(SYSTEM_PROMPT)
    conv.user(request)
    return conv


def trip_date(rng: random.Random) -> str:
    """A departure date in spring 2025."""
    return f"2025-{rng.randint(4, 6):02d}-{rng.randint(1, 28):02d}"


# --- clean runs ------------------------------------------------------------------------------


def clean_weather(rng: random.Random) -> Conversation:
    """Weather for one or two cities, answered in order."""
    cities = rng.sample(CITIES, rng.randint(1, 2))
    conv = start("clean_weather", "clean", rng, f"What's the weather in {' and '.join(cities)}?")
    calls = conv.calls(*[("get_weather", {"city": c}) for c in cities])
    for made in calls:
        conv.answer(made)
    conv.say(f"Here is the current weather for {', '.join(cities)}.")
    return conv


def clean_booking(rng: random.Random) -> Conversation:
    """Look up the user, search flights, book the first one."""
    user, (origin, dest), date = rng.choice(USERS), rng.choice(ROUTES), trip_date(rng)
    conv = start("clean_booking", "clean", rng, f"I'm {user}. Book me {origin}-{dest} on {date}.")
    conv.answer(conv.call("get_user", {"user_id": user}))
    search = conv.call("search_flights", {"origin": origin, "destination": dest, "date": date})
    flights = flight_list(origin, dest, date, rng)
    conv.result(search, ok(_json(flights)))
    conv.answer(conv.call("book_flight", {"flight_id": flights[0]["flight_id"], "user_id": user}))
    conv.say(f"You are booked on {flights[0]['flight_id']}.")
    return conv


def clean_sql(rng: random.Random) -> Conversation:
    """One read-only query and one small file."""
    conv = start("clean_sql", "clean", rng, "Which cities had bookings, and what's in my notes?")
    conv.answer(conv.call("run_sql", {"query": "SELECT city, count(*) FROM bookings GROUP BY 1"}))
    conv.answer(conv.call("read_file", {"path": "notes/trip.md"}))
    conv.say("Bookings per city are above; your notes list what to pack.")
    return conv


# --- pairing ---------------------------------------------------------------------------------


def parallel_out_of_order(rng: random.Random) -> Conversation:
    """Three parallel calls whose results arrive in reverse order: all paired."""
    cities = rng.sample(CITIES, 3)
    conv = start("parallel_out_of_order", "pairing", rng, f"Compare {', '.join(cities)}.")
    calls = conv.calls(*[("get_weather", {"city": c}) for c in cities])
    for made in reversed(calls):
        conv.answer(made)
    conv.say("Here is the comparison.")
    return conv


def empty_result(rng: random.Random) -> Conversation:
    """Empty result sets (``[]``) are successes, not errors."""
    conv = start("empty_result", "pairing", rng, "Any flights from Oslo to Nuuk? Am I waitlisted?")
    date = trip_date(rng)
    conv.result(
        conv.call("search_flights", {"origin": "OSL", "destination": "GOH", "date": date}), ok("[]")
    )
    conv.result(
        conv.call("run_sql", {"query": "SELECT * FROM waitlist WHERE user_id = 'u_1042'"}), ok("[]")
    )
    conv.say("There are no flights that day, and you are not on any waitlist.")
    return conv


def missing_result(rng: random.Random) -> Conversation:
    """A call that is never answered."""
    city = rng.choice(CITIES)
    conv = start("missing_result", "pairing", rng, f"Weather in {city}?")
    conv.call("get_weather", {"city": city})
    conv.user("Hello? Are you still there?")
    conv.say("Sorry, the weather service did not answer. Please try again later.")
    return conv


def orphan_result(rng: random.Random) -> Conversation:
    """A result whose id no call has, next to a proper pair."""
    user = rng.choice(USERS)
    conv = start("orphan_result", "pairing", rng, f"Show profile {user}.")
    conv.answer(conv.call("get_user", {"user_id": user}))
    conv.orphan("get_weather", ok(_json({"city": "Lima", "temperature_c": 19})))
    conv.say("Here is the profile.")
    return conv


def duplicate_result(rng: random.Random) -> Conversation:
    """A second answer to an already answered call."""
    (origin, dest), date = rng.choice(ROUTES), trip_date(rng)
    conv = start("duplicate_result", "pairing", rng, f"Flights {origin}-{dest} on {date}?")
    search = conv.call("search_flights", {"origin": origin, "destination": dest, "date": date})
    flights = ok(_json(flight_list(origin, dest, date, rng)))
    conv.result(search, flights)
    conv.result(search, flights, state="duplicate_result")
    conv.say("I found these flights.")
    return conv


def result_before_call(rng: random.Random) -> Conversation:
    """The result is logged before the call that asked for it; the two are linked."""
    city = rng.choice(CITIES)
    conv = start("result_before_call", "pairing", rng, f"Weather in {city}?")
    early = conv.new_call("get_weather", {"city": city})
    conv.result(early, ok(_json({"city": city, "temperature_c": 11})), state="result_before_call")
    conv.emit([early])
    conv.say(f"It is 11 °C in {city}.")
    return conv


def late_result(rng: random.Random) -> Conversation:
    """One of two parallel results arrives after the model already spoke again."""
    first, second = rng.sample(CITIES, 2)
    conv = start("late_result", "pairing", rng, f"Weather in {first} and {second}?")
    slow, fast = conv.calls(("get_weather", {"city": first}), ("get_weather", {"city": second}))
    conv.answer(fast)
    conv.say(f"{second} is ready; {first} is still loading.")
    conv.result(slow, ok(simulate_weather(first, rng)), state="late_result")
    conv.say(f"Now I have {first} as well.")
    return conv


def reused_id(rng: random.Random) -> Conversation:
    """Two calls share one id (as tau-bench does); each answered in order."""
    user, (origin, dest), date = rng.choice(USERS), rng.choice(ROUTES), trip_date(rng)
    conv = start("reused_id", "pairing", rng, f"I'm {user}; flights {origin}-{dest} on {date}?")
    first = conv.call("get_user", {"user_id": user})
    conv.answer(first)
    again = conv.new_call(
        "search_flights", {"origin": origin, "destination": dest, "date": date}, label=first.label
    )
    conv.emit([again])
    conv.answer(again)
    conv.say("Here are flights for you.")
    return conv


def name_mismatch(rng: random.Random) -> Conversation:
    """The result names a different tool than the call it answers."""
    city = rng.choice(CITIES)
    conv = start("name_mismatch", "pairing", rng, f"Weather in {city}?")
    made = conv.call("get_weather", {"city": city})
    conv.result(made, ok(simulate_weather(city, rng)), name="get_forecast")
    conv.say(f"Here is the weather in {city}.")
    return conv


# --- loops -----------------------------------------------------------------------------------


def loop_repeated_success(rng: random.Random) -> Conversation:
    """The same successful call four times in a row."""
    city = rng.choice(CITIES)
    conv = start("loop_repeated_success", "loops", rng, f"Weather in {city}?")
    for _ in range(4):
        conv.answer(conv.call("get_weather", {"city": city}))
    conv.say(f"It is mild in {city}.")
    return conv


def loop_repeated_errors(rng: random.Random) -> Conversation:
    """The same query five times: four timeouts, then a success."""
    conv = start("loop_repeated_errors", "loops", rng, "How many bookings per city?")
    query = {"query": "SELECT city, count(*) FROM bookings GROUP BY city"}
    for _ in range(4):
        conv.result(
            conv.call("run_sql", query), text_error("Request timed out after 30s", "timeout")
        )
    conv.answer(conv.call("run_sql", query))
    conv.say("Here are the booking counts.")
    return conv


def loop_interleaved(rng: random.Random) -> Conversation:
    """The same lookup three times with other calls between (no A-B-A alternation)."""
    user, city, (origin, dest) = rng.choice(USERS), rng.choice(CITIES), rng.choice(ROUTES)
    conv = start("loop_interleaved", "loops", rng, f"Plan a trip for {user}.")
    lookup = {"user_id": user}
    conv.answer(conv.call("get_user", lookup))
    conv.answer(conv.call("get_weather", {"city": city}))
    conv.answer(
        conv.call("search_flights", {"origin": origin, "destination": dest, "date": trip_date(rng)})
    )
    conv.answer(conv.call("get_user", lookup))
    conv.answer(conv.call("read_file", {"path": "notes/trip.md"}))
    conv.answer(conv.call("run_sql", {"query": "SELECT * FROM trips WHERE user_id = 'x'"}))
    conv.answer(conv.call("get_user", lookup))
    conv.say("Here is your trip plan.")
    return conv


def ping_pong(rng: random.Random) -> Conversation:
    """A-B-A-B: the model alternates between two identical calls."""
    city = rng.choice(CITIES)
    conv = start("ping_pong", "loops", rng, f"Should I pack an umbrella for {city}?")
    for _ in range(2):
        conv.answer(conv.call("get_weather", {"city": city}))
        conv.answer(conv.call("read_file", {"path": "notes/packing.md"}))
    conv.say("Yes, pack an umbrella.")
    return conv


# --- content edge cases ----------------------------------------------------------------------


def oversized_file(rng: random.Random) -> Conversation:
    """A file dump of about 12k tokens, far above the 2,000-token budget."""
    conv = start("oversized_file", "content", rng, "Summarize the city guide.")
    made = conv.call("read_file", {"path": "docs/city-guide.md"})
    conv.result(made, ok(guide_dump(rng), oversized=True))
    conv.say("The guide covers markets, museums and walks along the river.")
    return conv


def bare_success(rng: random.Random) -> Conversation:
    """A booking answered only with the word ``success``."""
    user = rng.choice(USERS)
    conv = start("bare_success", "content", rng, f"Book AF1234 for {user}.")
    conv.result(conv.call("book_flight", {"flight_id": "AF1234", "user_id": user}), ok("success"))
    conv.say("Your booking went through.")
    return conv


def raw_traceback(rng: random.Random) -> Conversation:
    """A tool that leaks its Python traceback."""
    conv = start("raw_traceback", "content", rng, "List my trips.")
    made = conv.call("run_sql", {"query": "SELECT * FROM trips"})
    conv.result(made, text_error(TRACEBACK, "tool_exception"))
    conv.say("Sorry, the trips database is having problems.")
    return conv


def invalid_argument_json(rng: random.Random) -> Conversation:
    """Arguments that are not valid JSON (OpenAI only), then a corrected call."""
    city = rng.choice(CITIES)
    conv = start("invalid_argument_json", "content", rng, f"Weather in {city}?")
    broken = conv.new_call("get_weather", None, raw_args='{"city": "' + city + '"')
    conv.emit([broken])
    conv.result(
        broken, text_error("Error: could not parse arguments as JSON", "invalid_arguments_json")
    )
    conv.answer(conv.call("get_weather", {"city": city}))
    conv.say(f"Here is the weather in {city}.")
    return conv


def undeclared_tool(rng: random.Random) -> Conversation:
    """A call to a tool the trace does not declare."""
    (origin, dest), date = rng.choice(ROUTES), trip_date(rng)
    conv = start(
        "undeclared_tool", "content", rng, f"Fly me {origin}-{dest}.", ("openai_chat", "anthropic")
    )
    conv.result(
        conv.call("fly", {"to": dest}), text_error("Error: unknown tool 'fly'", "unknown_tool")
    )
    conv.answer(conv.call("search_flights", {"origin": origin, "destination": dest, "date": date}))
    conv.say("Here are flights you can book.")
    return conv


def schema_wrong_type(rng: random.Random) -> Conversation:
    """An argument of the wrong type (integer for a string), then the corrected call."""
    conv = start(
        "schema_wrong_type", "content", rng, "Look up customer 1042.", ("openai_chat", "anthropic")
    )
    made = conv.call("get_user", {"user_id": 1042})
    conv.result(
        made,
        text_error(
            "Error: validation failed for parameter 'user_id': expected string", "invalid_params"
        ),
    )
    conv.answer(conv.call("get_user", {"user_id": "u_1042"}))
    conv.say("Found customer u_1042.")
    return conv


def protocol_partial(rng: random.Random) -> Conversation:
    """Structured results: a partial answer and a success."""
    (origin, dest), date = rng.choice(ROUTES), trip_date(rng)
    conv = start("protocol_partial", "content", rng, f"Flights {origin}-{dest}, and weather?")
    search = conv.call("search_flights", {"origin": origin, "destination": dest, "date": date})
    conv.result(
        search,
        protocol("partial", "2 of 3 airlines answered.", data=flight_list(origin, dest, date, rng)),
    )
    weather = conv.call("get_weather", {"city": rng.choice(CITIES)})
    conv.result(weather, protocol("success", "Weather found.", data={"temperature_c": 17}))
    conv.say("Some airlines did not answer; here is what I found.")
    return conv


TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "tools/sql.py", line 41, in run_sql\n'
    "    return [row['id'] for row in cursor]\n"
    "KeyError: 'id'"
)


def simulate_weather(city: str, rng: random.Random) -> str:
    """A weather result for ``city``."""
    return _json({"city": city, "temperature_c": rng.randint(-5, 32), "conditions": "overcast"})


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


CLEAN: tuple[Builder, ...] = (clean_weather, clean_booking, clean_sql)
FLOW: tuple[Builder, ...] = (
    *CLEAN,
    parallel_out_of_order, empty_result, missing_result, orphan_result, duplicate_result,
    result_before_call, late_result, reused_id, name_mismatch,
    loop_repeated_success, loop_repeated_errors, loop_interleaved, ping_pong,
    oversized_file, bare_success, raw_traceback, invalid_argument_json, undeclared_tool,
    schema_wrong_type, protocol_partial,
)  # fmt: skip
