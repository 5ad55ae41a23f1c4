"""Sphinx extension: make every chapter calculator live in the published book.

A chapter shows its calculator as a cell whose output is an ipywidgets view. In the built HTML that
view is a snapshot: its controls move but nothing recomputes. For each such cell this extension

* marks the snapshot as a snapshot (greyed, inputs disabled, labelled), and adds a "Run live" button
  above it; the button runs the cell's own code with the real ``llmcourse`` package under Pyodide in a
  Web Worker of the page (``static/live_worker.js``; no server, no Jupyter kernel: ``llmcourse._live``
  connects ipywidgets to the page's widget manager, ``static/live_calculators.js``), in the snapshot's
  place; a status line says "starting" until the live widget is there, then "live";
* checks at build time that the live code runs on its own (the cell plus the chapter's earlier
  ``llmcourse`` imports it uses) in a fresh Python that can import only what the browser's Python has
  (the standard library and the wheels of ``scripts/build_lite.py``); a calculator that fails there
  (say, one that draws with matplotlib, which the browser's Python lacks) is labelled as not available
  live, with the reason, instead of offering a button that would fail;
* copies the live runtime (the Pyodide runtime and the wheels, with ``live.json`` naming those to load,
  built by ``scripts/build_lite.py`` into ``_build/lite``) into ``lite/`` of the HTML output;
* removes the sphinx-thebe script that Jupyter Book 1.x includes twice though thebe is off (it
  declares ``THEBE_JS_URL`` twice, a console error, and points at a CDN).
"""

from __future__ import annotations

import ast
import html
import json
import os
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STATIC = Path(__file__).parent / "static"


def _source(cell: nodes.Element) -> str:
    for child in cell.findall(nodes.literal_block):
        return child.astext()
    return ""


def _llmcourse_imports(code: str) -> list[tuple[str, set[str]]]:
    """The top-level ``import llmcourse...`` / ``from llmcourse... import`` statements of a cell,
    each with the names it binds."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            ok = all(a.name.split(".")[0] == "llmcourse" for a in stmt.names)
            bound = {a.asname or a.name.split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.ImportFrom):
            ok = (stmt.module or "").split(".")[0] == "llmcourse"
            bound = {a.asname or a.name for a in stmt.names}
        else:
            continue
        segment = ast.get_source_segment(code, stmt)
        if ok and segment:
            out.append((segment, bound))
    return out


def _names_used(code: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def _is_widget_cell(cell: nodes.Element) -> bool:
    return any(WIDGET_MIME in raw.astext() for raw in cell.findall(nodes.raw))


# What the in-browser Python has besides its standard library: the import names of the wheels that
# scripts/build_lite.py ships (LIVE_PACKAGES there; tests/test_live_extension.py keeps the two in step). The
# build-time check runs each live cell with every other import blocked.
LITE_MODULES = {
    "llmcourse",
    "sympy",
    "mpmath",
    "pint",
    "flexcache",
    "flexparser",
    "platformdirs",
    "typing_extensions",
    "ipywidgets",
    "comm",
    "traitlets",
}
# Runs the cells as the browser does (llmcourse._live, which stands in for IPython there), each in a fresh
# namespace, in a Python that can import only the standard library and LITE_MODULES.
CHECK = """
import json, sys
allowed = set(sys.stdlib_module_names) | set(sys.argv[1].split(","))
class OnlyAllowed:  # a module the browser's Python lacks is "not installed" here too
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in allowed:
            return None
        return self.finder.find_spec(name, path, target) if hasattr(self.finder, "find_spec") else None
    def __getattr__(self, attr):
        return getattr(self.finder, attr)
sys.meta_path[:] = [OnlyAllowed(f) for f in sys.meta_path]
from llmcourse import _live
_live.install(lambda text, buffers: None)
for i, code in enumerate(json.loads(sys.stdin.read())):
    error = _live.run(code, i)
    if error:
        sys.exit(error)
"""


def live_check(codes: list[str]) -> str | None:
    """Run the live cells of a page, as the browser runs them, in a fresh Python that can import only what
    the browser's can. Returns the error, or None."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", CHECK, ",".join(sorted(LITE_MODULES))],
        input=json.dumps(codes),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or ["failed"])[-1]


def _download(app: Sphinx) -> str:
    """What a first live start downloads, from the live runtime's manifest (``live.json``)."""
    try:
        manifest = json.loads((Path(app.confdir) / app.config.live_lite_dir / "live.json").read_text())
    except (OSError, ValueError):
        return "tens of MB"
    return f"about {manifest.get('bytes_at_start', manifest['bytes']) / 1e6:.0f} MB"


def add_live_controls(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    cells = [n for n in doctree.findall(nodes.container) if n.get("nb_element") == "cell_code"]
    if not cells:
        return
    imports: list[tuple[str, set[str]]] = []
    live: list[tuple[nodes.Element, str]] = []
    for cell in cells:
        code = _source(cell)
        used = _names_used(code)
        needed = [stmt for stmt, bound in imports if bound & used]
        if _is_widget_cell(cell) and ("llmcourse" in code or needed):
            # the cell, preceded by the chapter's earlier llmcourse imports that it uses
            live.append((cell, "\n".join([*dict.fromkeys(needed), code])))
        imports.extend(_llmcourse_imports(code))
    if not live:
        return
    error = live_check([code for _, code in live])
    errors = [error] * len(live)
    if error and len(live) > 1:  # which of them
        errors = [live_check([code]) for _, code in live]
    for (cell, live_code), error in zip(live, errors, strict=True):
        if error:
            logger.info("a calculator of %s is not available live: %s", docname, error)
        cell["classes"].append("llmcourse-live-cell")
        for out in cell.findall(nodes.container):
            if out.get("nb_element") == "cell_code_output":
                out["classes"].append("llmcourse-snapshot")
        if error:
            controls = (
                '<div class="llmcourse-live" data-state="unavailable"><span class="llmcourse-live-status">'
                "Below: a snapshot computed when the book was built; its inputs do not recompute. This "
                "calculator cannot run live in the browser: "
                f"<code>{html.escape(error)}</code>. Open the chapter in Jupyter to use it.</span></div>"
            )
        else:
            controls = (
                f'<div class="llmcourse-live" data-state="snapshot" '
                f'data-code="{html.escape(json.dumps(live_code))}">'
                '<button type="button" class="llmcourse-live-run">&#9654; Run live: recompute in your browser</button> '
                '<span class="llmcourse-live-status">Below: a snapshot computed when the book was built; '
                f"its inputs do not recompute. Run live starts Python in this page (no server; {_download(app)} "
                "and 5&#8211;15 s the first time).</span></div>"
            )
        cell.insert(0, nodes.raw("", controls, format="html"))
    logger.verbose("live calculators: %d in %s", len(live), docname)


REQUIRE_CONFIG = (
    # RequireJS reads a global `require` object as its configuration. The widgets HTML manager finds its
    # fonts next to its module's URL, by default <page dir>/@jupyter-widgets/html-manager/dist/ (404s):
    # point that module path at the vendored copy in _static.
    'var require = {paths: {"@jupyter-widgets/html-manager/dist": new URL("_static/vendor/html-manager", '
    'new URL(document.documentElement.dataset.content_root || "./", document.baseURI)).href}};'
)


def fix_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """Per page: drop sphinx-thebe (thebe is off, yet Jupyter Book adds its script twice and a CDN URL),
    and configure RequireJS before it loads on pages with widgets."""
    from sphinx.builders.html._assets import _JavaScript

    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [
                f
                for f in context[key]
                if "thebe" not in str(f).lower() and "THEBE" not in getattr(f, "attributes", {}).get("body", "")
            ]
    scripts = context.get("script_files", [])
    for i, f in enumerate(scripts):
        if str(getattr(f, "filename", f) or "").endswith("require.js"):
            scripts.insert(i, _JavaScript("", priority=getattr(f, "priority", 500), body=REQUIRE_CONFIG))
            break


FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")


def serve_widget_fonts(app: Sphinx, exception: Exception | None) -> None:
    """The widgets' stylesheet, injected into the page, asks for its icon fonts at <page dir>/@jupyter-widgets/<file>
    (a widget that draws an icon glyph, such as the exercise pages' answer box, makes the browser fetch them): serve the
    vendored fonts there too, for every folder of pages, so no request fails and none leaves the book."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    fonts = [f for f in (out / "_static" / "vendor" / "html-manager").glob("*") if f.suffix in FONT_SUFFIXES]
    folders = {p.parent for p in out.glob("**/*.html") if "_static" not in p.parts and "lite" not in p.parts}
    for folder in folders:
        dest = folder / "@jupyter-widgets"
        dest.mkdir(exist_ok=True)
        for f in fonts:
            shutil.copyfile(f, dest / f.name)


def copy_lite(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    src = Path(app.confdir) / app.config.live_lite_dir
    if not (src / "live.json").exists():
        logger.info("live calculators: no live site at %s (run scripts/build_lite.py); pages keep their buttons", src)
        return
    dest = Path(app.outdir) / "lite"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".inputs-sha256"))
    logger.info("live calculators: copied %s -> %s", src, dest)


def refresh_static(app: Sphinx, exception: Exception | None) -> None:
    """Copy this extension's static files (the page's and the worker's scripts) into the site when they changed:
    Sphinx copies static files only when some page is rebuilt, so an edit of a script alone would leave the
    built site, and the browser tests run on it, with the old one."""
    if exception is not None or app.builder.format != "html":
        return
    dest = Path(app.outdir) / "_static"
    for f in STATIC.iterdir():
        target = dest / f.name
        if f.is_file() and (not target.exists() or target.read_bytes() != f.read_bytes()):
            shutil.copy2(f, target)
            logger.info("live calculators: updated %s", target)


def theme_mode(app: Sphinx, config: Any) -> None:
    """Give the theme an explicit colour mode: with none, pydata-sphinx-theme logs a console error
    ("Got invalid theme mode") on every page for a reader who never chose one."""
    config.html_static_path.append(str(STATIC))
    config.html_context = {"default_mode": "light", **(config.html_context or {})}


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("live_lite_dir", "_build/lite", "html")
    app.connect("doctree-resolved", add_live_controls)
    app.connect("html-page-context", fix_scripts, priority=900)
    app.connect("build-finished", copy_lite)
    app.connect("build-finished", serve_widget_fonts)
    app.connect("build-finished", refresh_static)
    app.connect("config-inited", theme_mode)
    app.add_js_file("live_calculators.js")
    app.add_css_file("live_calculators.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
