"""``toollens reanalyze``: recompute every derived fact from the stored provided facts.

No re-import is needed when a rule improves: the canonical trace is rebuilt from the stored
messages, calls and results (the same values the parser produced), analyzed again with the
stored token counts, and its derived rows are replaced. Human corrections are kept.
"""

from __future__ import annotations

from sqlalchemy import Engine

from db.contract.vocabulary import DEFAULT_TOKEN_BUDGET
from db.session import Maintenance
from ingest.analysis.trace import analyze_trace
from ingest.importing.rebuild import trace_from_stored
from ingest.importing.rows import build_rows


def reanalyze(engine: Engine, *, budget: int = DEFAULT_TOKEN_BUDGET) -> int:
    """Re-run the analysis over every stored trace; returns how many traces were updated."""
    done = 0
    store = Maintenance(engine)
    for ids in store.trace_id_batches():
        batch = []
        for stored in store.stored_traces(ids):
            trace, tokens = trace_from_stored(stored)
            facts = analyze_trace(trace, tokens, budget=budget, encoding=stored.encoding)
            batch.append((stored.id, build_rows(trace, facts, tokens)))
        store.replace_derived(batch)
        done += len(batch)
    return done
