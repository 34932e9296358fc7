"""The profile and ``index.md`` as HTML: CommonMark through markdown-it-py with raw HTML off (a
memory's words stay text: ``<script>`` is shown, never run), images off (the policy allows no
picture from elsewhere, and a picture is how a page phones home), and links only to http(s),
mailto or this site (no ``javascript:``, no ``data:``). A line carrying a control or bidirectional
character is withheld whole with recall's marker, as recall does with such text (I15)."""

from __future__ import annotations

import re
from typing import Final

from markdown_it import MarkdownIt
from markupsafe import Markup

from memory_es.browse.journal import UNSAFE_TEXT_MARKER
from memory_es.text import UNSAFE_CHAR

LINK_SCHEMES: Final = ("http://", "https://", "mailto:", "/", "#")  # a link goes nowhere else
_LEAD: Final = re.compile(r"\s*(?:[-*+]|\d{1,9}[.)]|#{1,6}|>)?\s*")  # a list item, heading
_RENDERER: Final = MarkdownIt("commonmark", {"html": False}).disable("image")
_RENDERER.validateLink = (  # type: ignore[method-assign]  # markdown-it-py documents this
    lambda url: url.strip().lower().startswith(LINK_SCHEMES))


def render(text: str) -> Markup:
    """``text`` (Markdown) as safe HTML."""
    lines = [_withheld(line) if UNSAFE_CHAR.search(line) else line
             for line in text.splitlines()]
    return Markup(_RENDERER.render("\n".join(lines)))  # markdown-it escaped every text


def _withheld(line: str) -> str:
    """The line's Markdown lead (a list item's dash, a heading's hashes) and the marker."""
    lead = _LEAD.match(line)
    return (lead.group(0) if lead else "") + UNSAFE_TEXT_MARKER
