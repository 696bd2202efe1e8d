"""Pair links (``dashboard.widgets``): untrusted ids encoded, only the Trace page opened, the
server's base path followed; table heights.
"""

from dashboard import widgets


def test_pair_links_encode_untrusted_ids_and_only_open_the_trace_page() -> None:
    assert widgets.pair_link("run a&pair=9", "2:0") == "/trace?trace=run+a%26pair%3D9&pair=2:0"
    assert widgets.pair_link("javascript:alert(1)") == "/trace?trace=javascript:alert%281%29"
    assert widgets.table_height(3) == 38 + 3 * 35 + 2
    assert widgets.table_height(50, max_rows=12) == widgets.table_height(12)


def test_pair_links_follow_the_servers_base_path() -> None:
    from streamlit import config

    before = config.get_option("server.baseUrlPath")
    try:
        config.set_option("server.baseUrlPath", "/tools/lens/")
        assert widgets.pair_link("demo-1", "2:0") == "/tools/lens/trace?trace=demo-1&pair=2:0"
        assert widgets.app_path("/trace") == "/tools/lens/trace"
    finally:
        config.set_option("server.baseUrlPath", before)
    assert widgets.pair_link("demo-1") == "/trace?trace=demo-1"
