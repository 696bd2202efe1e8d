"""Keep the cyclic garbage collector off what the dashboard server holds for its lifetime.

A page run creates tens of thousands of short-lived objects (query rows, DataFrames, Plotly
figures); each time their count passes the collector's threshold it runs, and its full
collections walk every object the process holds — about 235,000 once Streamlit, pandas, Plotly,
SQLAlchemy and the pages are imported. Once those objects are frozen (``gc.freeze``: the
collector skips them, they are never freed, which is what modules and the app's state are for
anyway), a page run spends several times less in the collector (docs/performance.md).

:func:`freeze_startup_heap` runs after the first page run of the process (the imports and the
engine exist then), once: freezing again later would pin garbage that is merely not collected
yet.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_startup_heap() -> bool:
    """Collect, then freeze everything alive, the first time it is called in the process;
    returns whether it froze now."""
    global _frozen
    if _frozen:
        return False
    gc.collect()
    gc.freeze()
    _frozen = True
    return True
