"""The report page's style and script are real files shipped with the package
(where ruff-like tools and editors see them), inlined into the page as they are:
the page stays whole with the network off."""

from __future__ import annotations

from importlib import resources

from skillopt.runs.html.document import document


def _asset(name: str) -> str:
    return (resources.files("skillopt.runs.html") / "assets" / name).read_text("utf-8")


def test_the_page_inlines_its_style_and_script_from_the_shipped_files():
    css, js = _asset("report.css"), _asset("report.js")
    assert css.startswith(":root") and "#tip" in css
    assert "data-tip" in js and "addEventListener" in js
    page = document("a <run>", "<h1>x</h1>", [("score", "Validation")], "<p>b</p>", {"k": 1})
    assert f"<style>\n{css}</style>" in page
    assert f"<script>\n{js}</script>" in page
    assert "default-src 'none'" in page  # nothing may load from anywhere
    assert "<title>a &lt;run&gt;</title>" in page
