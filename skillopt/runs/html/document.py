"""The frame every report page shares: the document with its inline style and
script (real files under `assets/`, inlined as they are), the embedded JSON, and
the small pieces both the run page and the comparison draw (file names, diffs).

Invariants: the page is whole as written: its style and script are inlined and
its Content-Security-Policy lets nothing load, so it opens from disk with the
network off. Every piece of text that came from a run is escaped; the embedded
JSON cannot close its script element (`<` is written as `\\u003c`).
"""

from __future__ import annotations

import json
import re
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from skillopt.runs.html.charts import attr


@cache
def asset(name: str) -> str:
    """The text of `assets/<name>` (the page's style or script), read once."""
    text = (resources.files("skillopt.runs.html") / "assets" / name).read_text("utf-8")
    # the page has always opened its style and script on a new line
    return "\n" + text


def _json(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# bidirectional embedding, override and isolate controls: one left unclosed in a task
# id or an answer would reverse the rest of the line it is shown on
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def document(title: str, header: str, nav: list[tuple[str, str]], body: str, data: Any) -> str:
    """The whole page: `header`, a link per `(anchor, title)` of `nav`, `body`, and
    `data` embedded as JSON (`#skillopt-data`) for whoever reads the page's data.
    Bidirectional controls are taken out of everything the page shows, the data
    its script renders included: text from a run cannot turn the page's lines around."""
    links = "".join(f'<a href="#{attr(a)}">{escape(t)}</a>' for a, t in nav)
    return _BIDI.sub("", _page(title, header, links, body, data))


def _page(title: str, header: str, links: str, body: str, data: Any) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # nothing may load from anywhere: the page is whole as written
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{escape(title)}</title><style>{asset('report.css')}</style></head><body>"
        f"<header>{header}</header><nav>{links}</nav><main>{body}</main>"
        '<div id="tip" role="tooltip"></div>'
        f'<script type="application/json" id="skillopt-data">{_json(data)}</script>'
        f"<script>{asset('report.js')}</script></body></html>\n"
    )


def page_data(d: dict[str, Any]) -> dict[str, Any]:
    """What a page embeds as JSON: the report's data without the bulky parts the
    page already shows (diffs, the best skill's text)."""
    steps = [{k: v for k, v in s.items() if k != "diff"} for s in d["steps"]]
    return {k: v for k, v in d.items() if k not in ("steps", "best_text")} | {"steps": steps}


def path_code(value: object) -> str:
    """A file's name, its whole path on hover (and under Settings & files)."""
    text = str(value)
    name = text.rstrip("/").rsplit("/", 1)[-1] or text
    return f'<code title="{attr(text)}">{escape(name)}</code>'


def diff_html(text: str) -> str:
    if not text.strip():
        return '<p class="muted">No change to the skill.</p>'
    out = []
    for line in text.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ", "new file")):
            css = "meta"
        elif line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            css = "ctx"
        out.append(f'<span class="{css}">{escape(line) or " "}</span>')
    return f'<pre class="diff">{"".join(out)}</pre>'
