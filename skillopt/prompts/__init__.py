"""Prompt templates kept as Markdown files next to this module.

A template names its slots as `{{name}}`; `render_prompt` fails loudly on a slot
left unfilled so a template and its caller never drift apart silently.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_SLOT = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


@cache
def load_prompt(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")


def render_prompt(name: str, **values: object) -> str:
    template = load_prompt(name)
    missing = {m.group(1) for m in _SLOT.finditer(template)} - values.keys()
    if missing:
        raise KeyError(f"prompt {name!r} needs {sorted(missing)}")
    return _SLOT.sub(lambda m: str(values[m.group(1)]), template)
