"""The Tokens page in Streamlit's AppTest: the budget (slider and URL), the axis, the biggest
results and opening one on the Trace page.

On ``analysis_store_url``: exact figures, cross-checked against ``summarize`` where it has them.
"""

from dbfixture import OpenStorePage
from page_support import assert_opened, captions, chart_spec, metrics, open_section, select_row

from dashboard import pages

TOKENS = pages.TOKENS.script


def test_tokens_page_counts_results_over_the_default_budget(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(TOKENS)
    assert metrics(at) == {
        "Over budget": "1",
        "Share over budget": "9.1%",
        "Tool Message tokens": "3,347",
        "Of the transcripts' tokens": "46.0%",
    }
    assert captions(at)[0] == (
        "Token counts: cl100k_base (the encoding of the latest import). Exact for 3 traces "
        "(counted with their model's own tokenizer); estimates for 0 (another model's, e.g. "
        "Claude counted with an OpenAI encoding, or no model named). Images count by their "
        "provider's image rule: estimates too."
    )
    # No trace of this store carries usage: no share of a model call's input.
    open_section(at, "tokens_tab", "Share of the model's input")
    assert (
        "No Tool Message here was read by a model call whose usage the trace reports."
        in captions(at)
    )
    open_section(at, "tokens_tab", "By tool")
    box = chart_spec(at, 0)
    assert box["data"][0]["y"][:3] == ["get_weather", "read_file", "write_file"]
    assert box["data"][0]["upperfence"][0] == 2500
    assert box["layout"]["shapes"][0]["x0"] == 2000
    # Logarithmic by default (the toggle is on and the URL says nothing).
    assert at.toggle(key="tokens_log").value is True
    assert box["layout"]["xaxis"]["type"] == "log"
    open_section(at, "tokens_tab", "Share of the transcript")
    assert chart_spec(at, 0)["data"][0]["y"] == [0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    open_section(at, "tokens_tab", "Biggest")
    biggest = at.dataframe(key="biggest_table").value
    assert list(biggest["tokens"][:2]) == [2500, 500]


def test_the_budget_comes_from_the_url_even_outside_the_slider_range(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(TOKENS, {"budget": "50"})
    assert metrics(at)["Over budget"] == "4"
    assert metrics(at)["Share over budget"] == "36.4%"
    assert at.slider(key="budget_slider").value == 100
    assert chart_spec(at, 0)["layout"]["shapes"][0]["x0"] == 50


def test_the_token_axis_turns_linear_from_the_url(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(TOKENS, {"tokens_log": "false"})
    assert at.toggle(key="tokens_log").value is False
    assert chart_spec(at, 0)["layout"]["xaxis"]["type"] == "linear"


def test_moving_the_budget_slider_updates_the_url_and_the_count(
    open_analysis_page: OpenStorePage,
) -> None:
    at = open_analysis_page(TOKENS)
    at.slider(key="budget_slider").set_value(400).run()
    assert not at.exception
    assert at.query_params["budget"] == "400"
    assert at.number_input(key="budget").value == 400
    assert metrics(at)["Over budget"] == "2"


def test_selecting_a_big_result_opens_it(open_analysis_page: OpenStorePage) -> None:
    at = open_analysis_page(TOKENS, {"tokens_tab": "Biggest"})
    select_row(at, "biggest_table", 1)
    assert_opened(at, "run-b", "3:0")
