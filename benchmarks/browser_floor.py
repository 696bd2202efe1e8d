"""``make bench-browser-floor``: what Streamlit and Plotly alone cost in the browser, the floor
under the issue's "a page's content within 2x a one-line Streamlit page".

Three pages served the same way (``streamlit run``, the options ``toollens serve`` uses) and
loaded warm in headless Chromium, interleaved (``ROUNDS`` rounds), each measured as
``make bench-ui`` measures the dashboard's pages (``tests/browser_support.open_page``: from
navigation start until the page's content is drawn and stays so): the one-line page
(``st.write("hi")``), the dashboard's shell with a title and a caption
(``benchmarks/floor/shell_page.py``: thirteen pages in the navigation, two popovers of
filters, a text field), and the same with one Plotly bar chart of five bars. No database and
no data: a dashboard page with a chart cannot be faster than the third. Prints the medians and
their ratios to the one-line page. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.ui_bench import REPO, load_trivial_page, trivial_script

SHELL = REPO / "benchmarks" / "floor" / "shell_page.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from browser_support import launch, new_context, open_page, serve_script
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="toollens-floor-"))
    with (
        serve_script(trivial_script(folder), folder / "one-line.log") as one_line,
        serve_script(SHELL, folder / "shell.log") as shell,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        page = new_context(browser).new_page()
        loads = {
            "one-line page": lambda: load_trivial_page(page, one_line.url),
            "shell, title": lambda: open_page(page, f"{shell.url}/tokens", text="Tokens"),
            "shell, title, one chart": lambda: open_page(
                page, f"{shell.url}/tokens?chart=1", text="Tokens"
            ),
        }
        for load in loads.values():  # the first loads fill the browser's cache
            load()
        times: dict[str, list[float]] = {name: [] for name in loads}
        for _ in range(args.rounds):
            for name, load in loads.items():
                times[name].append(load())
        browser.close()
    base = statistics.median(times["one-line page"])
    print(f"warm loads in headless Chromium, median of {args.rounds} interleaved rounds:")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<24} {median:6.0f} ms  {median / base:4.2f}x the one-line page")


if __name__ == "__main__":
    main()
