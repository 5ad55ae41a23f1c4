"""Sphinx extension: the book's phone-first layout.

* Every figure a chapter draws (a PNG output of a code cell, drawn by ``llmcourse.plots``) gets the alt text its
  PNG carries (``Description``: what the figure shows, written by ``llmcourse.plots.finish``) in place of the file
  path myst-nb gives it, and the class ``llmcourse-figure``. It is marked as scaled (``scale: 100``: drawn at its
  own size, never wider than the column), so Sphinx links it to its full-size image (``html_scaled_image_link``):
  on a phone a tap opens the figure at full size, to zoom.
* ``static/book_layout.css``: code and outputs wrap at the column's edge (nothing to scroll sideways, nothing cut
  mid-number), display equations and tables scroll inside their own box, figures fit the column.

``tests/browser/test_phone.py`` checks the result at 390 px and at 1280 px.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

STATIC = Path(__file__).parent / "static"


def png_text(path: Path) -> dict[str, str]:
    """The text chunks (tEXt, zTXt, iTXt) of a PNG file; {} for anything else."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return {}
    out, i = {}, 8
    while i + 8 <= len(data):
        length = int.from_bytes(data[i : i + 4], "big")
        kind, body = data[i + 4 : i + 8], data[i + 8 : i + 8 + length]
        i += 12 + length
        if kind == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            out[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            out[key.decode("latin-1")] = zlib.decompress(value[1:]).decode("latin-1")
        elif kind == b"iTXt" and b"\0" in body:
            key, rest = body.split(b"\0", 1)
            compressed, rest = rest[0], rest[2:]
            _lang, _translated, text = rest.split(b"\0", 2)
            out[key.decode("latin-1")] = (zlib.decompress(text) if compressed else text).decode("utf-8")
        elif kind == b"IEND":
            break
    return out


def describe_figures(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Give each figure drawn by a code cell the alt text its PNG carries, and a link to its full size. (At
    ``doctree-resolved``: myst-nb turns an output into an image in a post-transform, after ``doctree-read``.)"""
    for image in doctree.findall(nodes.image):
        uri = image.get("uri", "")
        if not uri.endswith(".png") or "://" in uri:
            continue
        # where Sphinx found it (relative to the source directory), else the URI as myst-nb wrote it
        found = [str(image.get("candidates", {}).get("*", "")), uri, app.env.relfn2path(uri, docname)[1]]
        path = next((p for p in (Path(app.srcdir, f) for f in found if f) if p.is_file()), None)
        text = png_text(path) if path else {}
        if text.get("Description"):
            image["alt"] = text["Description"]
            image["classes"].append("llmcourse-figure")
            image.setdefault("scale", 100)


def add_static(app: Sphinx, config: Any) -> None:
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", describe_figures)
    app.connect("config-inited", add_static)
    app.add_css_file("book_layout.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
