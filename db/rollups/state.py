"""Whether the rollups hold the whole store (:class:`db.schema.RollupState`), read once per
transaction.

Every catalogued figure asks it before it picks a rollup (``db.rollups.read.scope``), so a page
or ``toollens summary`` would otherwise read the one-row table once per figure. The answer is
kept in the connection's ``info`` with the transaction it was read in: a new transaction reads
it again (another process may have counted or invalidated the rollups meanwhile), and a write of
the state through a connection forgets it there (:func:`forget`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, select

from db.schema import RollupState

#: The ``Connection.info`` key of ``(transaction, State)``.
_KEY = "toollens_rollup_state"


@dataclass(frozen=True, slots=True)
class State:
    """The rollups hold the whole store (``complete``) but for the ``pending`` tables."""

    complete: bool
    pending: tuple[str, ...]


def read(conn: Connection) -> State:
    """The rollup state as ``conn``'s current transaction sees it (one statement the first
    time in a transaction, none after)."""
    kept = conn.info.get(_KEY)
    if kept is not None and kept[0] is conn.get_transaction():
        found: State = kept[1]
        return found
    row = conn.execute(
        select(RollupState.complete, RollupState.pending).where(RollupState.id == 1)
    ).one_or_none()
    found = (
        State(False, ())
        if row is None
        else State(bool(row[0]), tuple(dict.fromkeys((row[1] or "").split())))
    )
    # The transaction the statement ran in (it began one if none was open); holding it keeps
    # its identity from being reused by a later one.
    conn.info[_KEY] = (conn.get_transaction(), found)
    return found


def forget(conn: Connection) -> None:
    """Forget the state read through ``conn`` (after writing it there)."""
    conn.info.pop(_KEY, None)


__all__ = ["State", "forget", "read"]
