"""What the change between the generated populations (``ingest.scenarios.populations``:
``BASELINE`` and ``CANDIDATE``) does, as the comparison must flag it, and nothing else:
(tool, metric) -> verdict, ``None`` being all tools. ``tests/test_compare.py`` checks it on
its populations, ``tests/test_compare_aa.py`` on its own (other seeds and sizes)."""

#: The flight search's error rate doubles, the added half a new invalid-date error without
#: advice (so the error_without_suggestion finding doubles with it).
_FLIGHT_ERRORS = ("error_rate", "error_type:invalid_params", "finding:error_without_suggestion")
#: The notes-reading loop disappears: fewer calls, no wasted tokens, shorter runs.
_NOTES_LOOP = {
    "loop_rate": "better",
    "wasted_tokens_per_trace": "better",
    "calls_per_trace": "changed",
}

FLAGGED = {
    **{(tool, metric): "worse" for tool in ("search_flights", None) for metric in _FLIGHT_ERRORS},
    **{
        (tool, metric): verdict
        for tool in ("read_file", None)
        for metric, verdict in _NOTES_LOOP.items()
    },
    (None, "duration_s"): "better",
    # Shorter runs: every Tool Message is read again by fewer later model calls, the weather's
    # and the flight search's too, and the candidate reads the notes once where the baseline
    # reads them three times.
    **{
        (tool, metric): "better"
        for tool in ("read_file", "search_flights", "get_weather", None)
        for metric in ("reread_tokens_per_trace", "cost_per_trace")
    },
}
