"""`python -m helpers site build DIR`: the series as an offline HTML book, read without running anything.

Every chapter from its stored outputs, with navigation; figures stay interactive (plotly.js is copied into DIR,
no CDN); the chapters' math is MathML, drawn by the browser itself (no MathJax); the set-up cell is folded under
a one-line summary; the chapter map is the index; the teacher guide, the glossary and the helpers' plan are
pages of their own, all in the chapters' look. `python -m http.server` in DIR serves it. Needs the `dev` extra
(nbconvert, latex2mathml); refuses to write into the repository's own folders.
"""

from __future__ import annotations

import json
import os
import re
from html import escape
from pathlib import Path
from typing import Any

import nbformat
from jinja2 import DictLoader, pass_context
from latex2mathml.converter import convert
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from ..core.files import OutputError as ClassroomError
from ..core.files import output_folder, read_small_file, replace_file
from ..core.notebook_file import NotebookFileError, read_notebook
from ..core.project import CHAPTERS, ROOT, TIME_NOTE
from ..learning import glossary
from . import architecture, records
from .upkeep import PLOTLY

NOTEBOOKS = ROOT / "notebooks"
GUIDE = ROOT / "docs" / "teaching.md"

#: nbconvert's templates load require.js from a CDN: the book goes without it (and without MathJax, see TEMPLATE).
CDN_SCRIPT = re.compile(r"<script[^>]*\bsrc=\"https?://[^\"]*\"[^>]*>\s*</script>", re.I)
CHAPTER_LINK = re.compile(r'href="(\d\d_\w+)\.ipynb"')
#: A chapter's link to a glossary entry (docs/glossary.md#warp), which goes to the book's glossary page.
GLOSSARY_LINK = re.compile(r'href="(?:\.\./)?(?:docs/)?glossary\.md(#[^"]*)?"')
STYLE = ("<style>.book-nav{font-family:sans-serif;padding:8px 16px;background:#f3f3f3;display:flex;gap:24px}"
         ".book-nav a{text-decoration:none}.plotly-figure{width:100%}.book-setup>summary{cursor:pointer;"
         "margin:6px 0 6px var(--jp-cell-prompt-width);font-family:var(--jp-ui-font-family);"
         "font-size:var(--jp-ui-font-size1);color:var(--jp-ui-font-color2)}</style>")
#: nbconvert's lab page without MathJax (its script and configuration: the math is MathML), and with the set-up
#: cell (tagged "setup": it prepares Colab) folded under a one-line summary.
TEMPLATE = """{%- extends 'index.html.j2' -%}
{% block html_head_js_mathjax %}{% endblock html_head_js_mathjax %}
{% block codecell %}
{%- if 'setup' in cell.metadata.get('tags', []) -%}
<details class="book-setup"><summary>Set-up cell (prepares Colab; does nothing elsewhere): show its code</summary>
{{ super() }}</details>
{%- else -%}{{ super() }}{%- endif -%}
{% endblock codecell %}"""


class UnrenderableMath(ValueError):
    """TeX that latex2mathml cannot turn into MathML: the build stops rather than show TeX source."""


def mathml(tex: str, display: str) -> str:
    """`tex` as MathML (`display` "block" or "inline"), which browsers draw without MathJax. UnrenderableMath where
    latex2mathml fails, or keeps a command it does not know (as text with its backslash)."""
    try:
        drawn = convert(tex, display=display)
    except Exception as exc:  # latex2mathml's own errors derive from Exception, and carry no message
        raise UnrenderableMath(f"latex2mathml cannot convert the TeX {tex!r} ({type(exc).__name__})") from exc
    if "\\" in drawn:
        raise UnrenderableMath(f"latex2mathml leaves a command of the TeX {tex!r} as text (one it does not know)")
    return drawn


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, with the math its parser finds ($...$, $$...$$, \\[...\\], \\begin{...}) as
    MathML instead of TeX left for MathJax."""

    def block_math(self, body: str) -> str:
        return mathml(body, "block")

    def inline_math(self, body: str) -> str:
        return mathml(body, "inline")

    def latex_environment(self, name: str, body: str) -> str:
        return mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", "block")


class BookExporter(HTMLExporter):
    """nbconvert's lab page with the set-up cell folded; where `draw_math`, the markdown cells' math as MathML
    (code cells and outputs as nbconvert renders them)."""

    def __init__(self, draw_math: bool = False) -> None:
        super().__init__(template_name="lab", template_file="book.html.j2",
                         extra_loaders=[DictLoader({"book.html.j2": TEMPLATE})])
        self.draw_math = draw_math

    @pass_context
    def markdown2html(self, context: Any, source: str) -> str:
        """nbconvert's markdown filter (the same renderer settings), with MathMLRenderer for a markdown cell."""
        cell = context.get("cell", {})
        if not self.draw_math or cell.get("cell_type") != "markdown":
            return super().markdown2html(context, source)
        renderer = MathMLRenderer(escape=False, attachments=cell.get("attachments", {}),
                                  embed_images=self.embed_images,
                                  path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                                  anchor_link_text=self.anchor_link_text,
                                  exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
        return MarkdownWithMath(renderer=renderer).render(source)


def _nav(index: int | None = None) -> str:
    """Links to the index and, for the chapter at `index` (-1: the index itself), the previous and next chapters."""
    links = ['<a href="index.html">Contents</a>']
    if index is None:
        return f'<nav class="book-nav">{links[0]}</nav>'
    if index > 0:
        links.append(f'<a href="{_page(CHAPTERS[index - 1].file)}">&larr; {escape(CHAPTERS[index - 1].title)}</a>')
    if index + 1 < len(CHAPTERS):
        links.append(f'<a href="{_page(CHAPTERS[index + 1].file)}">{escape(CHAPTERS[index + 1].title)} &rarr;</a>')
    return f'<nav class="book-nav">{"".join(links)}</nav>'


def _page(notebook: str) -> str:
    return notebook.removesuffix(".ipynb") + ".html"


def interactive(nb: Any, prefix: str) -> int:
    """Replace each plotly figure's outputs by a div that plotly.js (loaded once per page) draws; the PNG stays as
    the picture for a browser without scripts. Returns how many figures were converted."""
    count = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if PLOTLY not in data:
                continue
            figure, png = data[PLOTLY], data.get("image/png")
            div = f"{prefix}-figure-{count}"
            spec = json.dumps({"data": figure.get("data", []), "layout": figure.get("layout", {})})
            spec = spec.replace("</", "<\\/")  # a string holding </script> must not end the script
            html = (f'<div id="{div}" class="plotly-figure"></div><script>(function () {{ const f = {spec}; '
                    f'Plotly.newPlot("{div}", f.data, f.layout, {{"responsive": true}}); }})();</script>')
            if png:
                html += f'<noscript><img alt="figure" src="data:image/png;base64,{png}"/></noscript>'
            output["data"] = {"text/html": html}
            count += 1
    return count


def chapter_html(path: Path, index: int) -> str:
    """One chapter as a page of the book; ClassroomError, naming the chapter and what is wrong, for a malformed
    file or math it cannot draw."""
    try:
        nb = read_notebook(path)
    except NotebookFileError as exc:
        raise ClassroomError(f"cannot make a page of {exc}") from None
    interactive(nb, path.stem)
    try:
        body = _export(nb, CHAPTERS[index].title, draw_math=True)
    except UnrenderableMath as exc:
        raise ClassroomError(f"{path.name}: {exc}") from exc
    return _with_nav(body, f'<script src="plotly.min.js"></script>{STYLE}', _nav(index))


def _export(nb: Any, title: str, draw_math: bool = False) -> str:
    """`nb` as a page titled `title`, without the template's CDN scripts, its links to the series' notebooks and
    glossary going to the book's pages."""
    nb.metadata["title"] = title
    body, _ = BookExporter(draw_math).from_notebook_node(nb)
    body = CDN_SCRIPT.sub("", body)
    body = CHAPTER_LINK.sub(r'href="\1.html"', body)  # links between chapters go to their pages
    return GLOSSARY_LINK.sub(r'href="glossary.html\1"', body)


def _with_nav(body: str, head: str, nav: str) -> str:
    """The page with `head` in its head, and `nav` at the top and the bottom of its body."""
    body = body.replace("</head>", head + "</head>", 1)
    at = body.find(">", body.find("<body")) + 1
    return body[:at] + nav + body[at:].replace("</body>", nav + "</body>", 1)


def _text_page(title: str, markdown: str, nav: str) -> str:
    """A page of Markdown (or of HTML without blank lines, which Markdown keeps as it is) in the chapters' look."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown)])
    return _with_nav(_export(nb, title), STYLE, nav)


def index_html(recorded: str = "") -> str:
    """The chapter map, as the book's first page (with `recorded`, the list of recorded runs, under it)."""
    rows = "".join(f'<tr><td>{c.file[:2]}</td><td><a href="{_page(c.file)}">{escape(c.title)}</a></td>'
                   f"<td>{escape(c.promise)}</td><td>{escape(c.time)}</td></tr>" for c in CHAPTERS)
    return _text_page("From Loops to TPUs", (
        "<h1>From Loops to TPUs</h1><p>Why GPUs and TPUs make deep learning fast, measured. This book shows every "
        "chapter as it was last run on the authors' machine; open the notebooks to measure yours.</p>"
        f"<table><tr><th>#</th><th>Chapter</th><th>What you get</th><th>Time</th></tr>{rows}</table>"
        f"<p>{escape(TIME_NOTE)}</p>{recorded}"
        '<p>Teaching with it? <a href="teaching.html">The teacher guide</a>. A word you do not know? '
        '<a href="glossary.html">The glossary</a>. How the helpers are built? <a href="architecture.html">Their '
        'plan</a>.</p>'), _nav(-1))


def guide_html(text: str) -> str:
    """The teacher guide (Markdown) as a page; its dollar amounts stay text (no math drawn here)."""
    return _text_page("Teaching with From Loops to TPUs", text, _nav())


def glossary_html() -> str:
    """The glossary as a page, each entry under an anchor the chapters' glossary links point to."""
    entries = "".join(f'<h2 id="{t.anchor}">{escape(t.name)}</h2><p>{escape(t.definition)}</p>'
                      for t in glossary.TERMS)
    return _text_page("Glossary", f"<h1>Glossary</h1>{entries}", _nav())


def architecture_html() -> str:
    """The helpers' plan (the sub-packages, the picture and the rules) as a page: the section docs/architecture.md
    opens with, made from the same docstrings."""
    body = architecture.section().replace(architecture.START, "").replace(architecture.END, "")
    return _text_page("How the helpers are built", f"# How the helpers are built\n\n{body}", _nav())


def recorded_page(notebook: str, run: records.Run) -> str:
    """The page of `notebook` as it ran in the recorded `run`: '03_gpu_cupy-nvidia-h200-2026-11-28.html'."""
    return f"{notebook.removesuffix('.ipynb')}-{run.folder.name}.html"


RECORDED = ("<style>.book-recorded{font-family:sans-serif;margin:12px 16px;padding:10px 16px;border-left:4px solid "
            "#b35c00;background:#fff6ec}.book-finding{font-family:sans-serif;margin:6px 0 6px "
            "var(--jp-cell-prompt-width);padding:6px 10px;border-left:4px solid #c0392b;background:#fdecea}</style>")


def _finding_note(finding: dict[str, Any]) -> dict[str, Any]:
    """An output that marks, under a cell of a recorded run, what the checks found in it and the issue item."""
    html = (f'<div class="book-finding">&#9888; Found by the checks of recorded runs ({escape(finding["rule"])}, '
            f'{escape(finding["item"])}): &ldquo;{escape(finding["text"])}&rdquo;</div>')
    return nbformat.v4.new_output("display_data", data={"text/html": html})


def recorded_html(run: records.Run, notebook: str, index: int) -> str:
    """`notebook` as it ran in `run`, a page of the book: a banner naming the device, the date and how it was made,
    each finding the checks made in it marked under its cell, and links back to the chapter's stored run."""
    try:
        nb = nbformat.read(run.folder / notebook, as_version=4)
        known = [k for k in run.known() if k["chapter"] == notebook]
    except (ValueError, OSError) as exc:  # not a notebook, or a findings.json that is not a list of findings
        raise ClassroomError(f"{run.folder.name}/{notebook}: cannot be read as a recorded run ({exc})") from None
    for finding in known:
        if isinstance(finding["cell"], int) and 0 <= finding["cell"] < len(nb.cells):
            nb.cells[finding["cell"]].setdefault("outputs", []).append(_finding_note(finding))
    interactive(nb, f"{Path(notebook).stem}-{run.folder.name}")
    title = f"{CHAPTERS[index].title}, as it ran on the {run.device} ({run.date})"
    try:
        body = _export(nb, title, draw_math=True)
    except UnrenderableMath as exc:
        raise ClassroomError(f"{run.folder.name}/{notebook}: {exc}") from exc
    items = sorted({k["item"] for k in known})
    banner = (f'<div class="book-recorded"><strong>A recorded run: chapter {notebook[:2]} as it ran on the '
              f'{escape(run.device)} ({escape(run.facts["device"]["kind"])}), {escape(run.date)}</strong>, at '
              f'commit {escape(run.facts["commit"])}, every exercise&#39;s solution filled in. '
              f'<a href="{_page(notebook)}">The chapter&#39;s own page</a> shows it as stored, run without a GPU or '
              f'TPU. ' + (f"The checks of recorded runs found {len(known)} finding{'s' * (len(known) != 1)} in it, "
                          "marked under their cells "
                          f"({escape('; '.join(items))}): the chapter has been asked to fix them, and this run "
                          "shows them until it is recorded again." if known else "The checks found nothing in it.")
              + "</div>")
    return _with_banner(_with_nav(body, f'<script src="plotly.min.js"></script>{STYLE}{RECORDED}', _nav(index)),
                        banner)


def _with_banner(page: str, banner: str) -> str:
    """`page` with `banner` under its first navigation bar."""
    at = page.find("</nav>") + len("</nav>")
    return page[:at] + banner + page[at:]


def _linked(page: str, notebook: str, latest: dict[str, records.Run]) -> str:
    """A chapter's page, with a banner linking its latest recorded run when `latest` has one."""
    run = latest.get(notebook)
    if run is None:
        return page
    return _with_banner(page.replace("</head>", RECORDED + "</head>", 1), (
        f'<div class="book-recorded">This chapter on a real {escape(run.facts["device"]["kind"])}: '
        f'<a href="{recorded_page(notebook, run)}">as it ran on the {escape(run.device)}, {escape(run.date)}</a> '
        "(a recorded run). This page is the stored run, made on a machine without one.</div>"))


def _recorded_pages(folder: Path, latest: dict[str, records.Run]) -> list[Path]:
    """Write each chapter's latest recorded run as a page into `folder`; the files written."""
    written = []
    for notebook, run in latest.items():
        written.append(folder / recorded_page(notebook, run))
        index = next(i for i, c in enumerate(CHAPTERS) if c.file == notebook)
        replace_file(written[-1], recorded_html(run, notebook, index).encode("utf-8"))
    return written


def recorded_index(latest: dict[str, records.Run]) -> str:
    """The index's list of recorded runs, one link per chapter, labelled with the device and the date."""
    if not latest:
        return ""
    items = "".join(f'<li><a href="{recorded_page(c.file, run)}">{c.file[:2]} {escape(c.title)}: as it ran on the '
                    f"{escape(run.device)}, {escape(run.date)}</a></li>"
                    for c in CHAPTERS if (run := latest.get(c.file)) is not None)
    return f"<h2>Recorded on a real GPU or TPU</h2><p>What these chapters do on the accelerator they use:</p><ul>" \
           f"{items}</ul>"


def _guide() -> str:
    """The teacher guide's Markdown; a ClassroomError, one line, when it is not UTF-8 text it can read."""
    try:
        return read_small_file(GUIDE, MAX_GUIDE_BYTES, "the guide is a file of its own", "the guide may have",
                               follow_links=False).decode("utf-8")
    except ValueError as exc:  # not a regular file, too large, or not UTF-8 (a UnicodeDecodeError)
        raise ClassroomError(f"cannot make a page of {GUIDE}: {exc}") from None


#: The most bytes the teacher guide may have (it is about 60 KB).
MAX_GUIDE_BYTES = 10 * 2**20


def build(folder: str | Path, force: bool = False, source: Path = NOTEBOOKS, runs: Path = records.RUNS) -> list[Path]:
    """Write the book into `folder`; returns the files written. Refuses the repository's own folders, and a
    folder that is not empty unless `force`; a link in `folder` where a page goes is replaced, never followed.
    Each GPU or TPU chapter with a recorded run under `runs` also gets its latest run as a page of its own."""
    import plotly

    folder = Path(folder)
    missing = [c.file for c in CHAPTERS if not os.path.lexists(source / c.file)]
    if missing or not GUIDE.is_file():
        raise ClassroomError(f"not found: {', '.join(missing) or GUIDE} (run this in a clone of the repository)")
    output_folder(folder, force, {ROOT: f"inside the repository ({ROOT})"}, "the site")
    try:
        latest = {c.file: run for c in CHAPTERS if c.uses and (run := records.latest(c.file, runs)) is not None}
    except ValueError as exc:  # a run.json that is not one
        raise ClassroomError(str(exc)) from None
    pages = {_page(chapter.file): _linked(chapter_html(source / chapter.file, index), chapter.file, latest)
             for index, chapter in enumerate(CHAPTERS)}  # every chapter read and drawn before the first is written
    pages |= {"index.html": index_html(recorded_index(latest)), "teaching.html": guide_html(_guide()),
              "glossary.html": glossary_html(), "architecture.html": architecture_html()}
    written = [folder / "plotly.min.js"]
    replace_file(written[0], (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes())
    written += _recorded_pages(folder, latest)
    for name, html in pages.items():
        written.append(folder / name)
        replace_file(written[-1], html.encode("utf-8"))
    return written
