"""The dashboard's shell without the dashboard (``make bench-browser-floor``): thirteen pages in
the navigation, a sidebar of two popovers of filters and a text field, and a page with a title
and a caption; with ``?chart=1`` also one Plotly bar chart of five bars. No database, no data:
what Streamlit and Plotly cost in the browser for such a page."""

import plotly.graph_objects as go
import streamlit as st


def tokens() -> None:
    st.title("Tokens")
    st.caption("Token size per Tool Message")
    if st.query_params.get("chart") == "1":
        st.plotly_chart(go.Figure(go.Bar(x=list("abcde"), y=[3, 1, 4, 1, 5])), key="chart")


def other() -> None:
    st.title("Other")


shell = st.navigation(
    [st.Page(tokens, title="Tokens", url_path="tokens", default=True)]
    + [st.Page(other, title=f"Page {i}", url_path=f"p{i}") for i in range(12)]
)
with st.sidebar:
    with st.popover("Filters"):
        st.date_input("From")
        st.date_input("To")
        st.multiselect("Model", ["a", "b"])
        st.multiselect("Tool", ["x", "y"])
    with st.popover("More filters"):
        st.multiselect("Agent", ["a"])
        st.multiselect("Import", ["1"])
    st.text_input("Reviewer")
shell.run()
