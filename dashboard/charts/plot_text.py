"""Trace text made inert in Plotly figures: the one escape every chart builder applies.

Plotly renders a subset of HTML in every text it draws — axis and tick labels, legend entries,
titles, annotations and hover labels (a hovertemplate's ``%{y}`` or ``%{customdata}`` is
inserted first and rendered with the template): ``<a href>`` becomes a live link, ``<b>``,
``<br>`` and ``<span style>`` change the text. Escaping ``&``, ``<`` and ``>`` as entities,
which Plotly turns back into the characters, shows a tool named ``<a href=…>`` as exactly that.
"""

from __future__ import annotations

import html
from collections.abc import Iterable


def plot_text(value: object) -> str:
    """``value`` as text Plotly shows literally.

    >>> plot_text('<a href="https://evil.example/">x</a> & co')
    '&lt;a href="https://evil.example/"&gt;x&lt;/a&gt; &amp; co'
    """
    return html.escape(str(value), quote=False)


def plot_texts(values: Iterable[object]) -> list[str]:
    """:func:`plot_text` of each value, in order."""
    return [plot_text(v) for v in values]
