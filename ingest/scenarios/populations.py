"""Two populations of agent runs with known differences: the test data of ``toollens compare``.

Every trace is the same travel task — weather for a city, a flight search, the trip notes —
written in the OpenAI Chat format. What differs between populations is stated in a
:class:`Population` and nothing else:

* ``get_weather`` fails with :data:`WEATHER_ERROR_RATE` in every population (the unchanged tool);
* ``search_flights`` times out with ``timeout_rate`` and, in addition, rejects the date with
  ``invalid_date_rate`` (a new error: its own fingerprint and error type);
* with ``loop_share``, the agent reads the trip notes :data:`LOOP_READS` times in a row (a loop
  at k = 3).

:data:`BASELINE` and :data:`CANDIDATE` are the pair the tests use: the flight search's error
rate doubles (0.15 → 0.30, the added half a new error), the loop disappears (0.4 → 0), the
weather tool stays as it was. Each population draws from its own seed, so the two are
independent samples, as two runs of an agent are. The rates are exact, not drawn: a seeded
shuffle picks which ``round(rate * traces)`` runs fail or loop, so "unchanged" means exactly
the same share in both populations, and a test that calls it unchanged tests the statistics,
not the luck of a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import orjson

from ingest.scenarios.agent import Conversation, ok, text_error
from ingest.scenarios.cases_flow import CITIES, ROUTES, start, trip_date
from ingest.scenarios.writers import Rendered, write_format

WEATHER_ERROR_RATE = 0.10
#: Identical reads of the notes in a looping run (occurrence reaches 4 ≥ k = 3).
LOOP_READS = 4
EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Population:
    """What a population of runs does; ``name`` prefixes its trace ids."""

    name: str
    timeout_rate: float
    invalid_date_rate: float
    loop_share: float


BASELINE = Population("baseline", timeout_rate=0.15, invalid_date_rate=0.0, loop_share=0.4)
CANDIDATE = Population("candidate", timeout_rate=0.15, invalid_date_rate=0.15, loop_share=0.0)


FlightError = Literal["timeout", "invalid_date"] | None


def _flights(origin: str, dest: str, date: str) -> list[dict[str, object]]:
    return [
        {"flight_id": code, "origin": origin, "destination": dest, "departs": f"{date}T{hour}"}
        for code, hour in (("AF1001", "08:00"), ("KL2002", "17:30"))
    ]


def trip_run(
    rng: random.Random, *, weather_fails: bool, flight_error: FlightError, loops: bool
) -> Conversation:
    """One run of the travel task; the flags say what goes wrong in it."""
    city, (origin, dest), date = rng.choice(CITIES), rng.choice(ROUTES), trip_date(rng)
    conv = start("trip", "compare", rng, f"Plan my trip to {city}: flight {origin}-{dest}.")
    weather = conv.call("get_weather", {"city": city})
    if weather_fails:
        conv.result(weather, text_error("Error: weather service unavailable (503)", "unavailable"))
    else:
        conv.answer(weather)
    search = conv.call("search_flights", {"origin": origin, "destination": dest, "date": date})
    if flight_error == "timeout":
        conv.result(search, text_error("Error: request timed out after 30s", "timeout"))
    elif flight_error == "invalid_date":
        conv.result(
            search,
            text_error("Error 400: invalid date format, expected YYYY-MM-DD", "invalid_params"),
        )
    else:
        # The same two flights every time: a success's size never depends on the seed, so a
        # size percentile moves only when the share of errors crosses it.
        conv.result(search, ok(orjson.dumps(_flights(origin, dest, date)).decode()))
    for _ in range(LOOP_READS if loops else 1):
        conv.result(
            conv.call("read_file", {"path": "notes/trip.md"}),
            ok("# notes/trip.md\n\nPacking list: passport, charger, rain jacket.\n"),
        )
    conv.say("Here is your trip plan.")
    return conv


def generate_population(out_dir: Path, p: Population, *, seed: int, traces: int) -> Path:
    """Write ``traces`` runs of ``p`` to ``out_dir/openai_chat.jsonl``; returns the file.

    The same population, seed and count always give byte-identical files.
    """
    layout = random.Random(f"{seed}:{p.name}:layout")

    def picked(*rates: float) -> list[int]:
        # Which runs get each event: consecutive slices of one seeded shuffle.
        order = list(range(traces))
        layout.shuffle(order)
        slot = [0] * traces
        start = 0
        for n, rate in enumerate(rates, 1):
            for index in order[start : start + round(rate * traces)]:
                slot[index] = n
            start += round(rate * traces)
        return slot

    weather = picked(WEATHER_ERROR_RATE)
    flights = picked(p.timeout_rate, p.invalid_date_rate)
    loops = picked(p.loop_share)
    flight_errors: tuple[FlightError, ...] = (None, "timeout", "invalid_date")
    items = []
    for index in range(traces):
        conv = trip_run(
            random.Random(f"{seed}:{p.name}:{index}"),
            weather_fails=weather[index] == 1,
            flight_error=flight_errors[flights[index]],
            loops=loops[index] == 1,
        )
        conv.assign_ids("openai_chat", random.Random(f"{seed}:{p.name}:ids:{index}"))
        started = EPOCH + timedelta(minutes=10 * index)
        items.append(Rendered(f"{p.name}-{index:03d}", "openai_chat", conv, started))
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_format(out_dir, "openai_chat", items)
