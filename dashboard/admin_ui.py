"""Admin controls: delete a trace or an import from the dashboard, after a confirmation step.

Only those who may delete see them (:func:`dashboard.auth.can`): an admin when login is on;
without login, whoever runs ``toollens serve`` with ``TOOLLENS_ADMIN=1``. The rows go through
:func:`dashboard.writes.delete` (which checks the role again) to :mod:`db.writes.deletion`, as with
``toollens delete``: every row that belongs to what is deleted, counted per table before the
user confirms.
"""

from __future__ import annotations

import streamlit as st

from dashboard import state, writes
from db.writes.deletion import Selection, count_rows


def delete_control(selection: Selection, label: str, key: str) -> bool:
    """A ``label`` button; pressed, it lists what would go, per table, and asks to confirm.

    Returns True on the run that deleted (the caller says what happens next); the caches
    are cleared so no page shows the deleted rows.
    """
    asking = f"{key}_asking"
    if not st.session_state.get(asking):
        if st.button(label, key=key, icon=":material/delete:"):
            st.session_state[asking] = True
            st.rerun()
        return False
    counts = count_rows(state.engine(), selection)
    listed = ", ".join(f"{table} {n:,}" for table, n in counts.items() if n)
    st.warning(f"Delete {selection.description}? This removes {listed}. It cannot be undone.")
    yes, no = st.columns(2)
    if yes.button("Yes, delete", key=f"{key}_yes", type="primary"):
        writes.delete(state.engine(), selection)
        st.session_state[asking] = False
        st.cache_data.clear()
        return True
    if no.button("Cancel", key=f"{key}_cancel"):
        st.session_state[asking] = False
        st.rerun()
    return False
