"""`python -m helpers site build DIR`: the series as an offline HTML book, read without running anything.

Every chapter from its stored outputs, with navigation; figures stay interactive (plotly.js is copied into DIR,
no CDN); the chapters' math is MathML, drawn by the browser itself (no MathJax); the set-up cell is folded under
a one-line summary; the chapter map is the index; the teacher guide and the glossary are pages of their own, all
in the chapters' look. `python -m http.server` in DIR serves it. Needs the `dev` extra (nbconvert, latex2mathml);
refuses to write into the repository's own folders.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any

import nbformat
from jinja2 import DictLoader, pass_context
from latex2mathml.converter import convert
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from . import glossary
from .files import OutputError as ClassroomError
from .files import output_folder, replace_file
from .project import CHAPTERS, TIME_NOTE
from .upkeep import PLOTLY

ROOT = Path(__file__).resolve().parent.parent
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
    """One chapter as a page of the book; ClassroomError, naming the chapter and the TeX, for math it cannot draw."""
    nb = nbformat.read(path, as_version=4)
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


def index_html() -> str:
    """The chapter map, as the book's first page."""
    rows = "".join(f'<tr><td>{c.file[:2]}</td><td><a href="{_page(c.file)}">{escape(c.title)}</a></td>'
                   f"<td>{escape(c.promise)}</td><td>{escape(c.time)}</td></tr>" for c in CHAPTERS)
    return _text_page("From Loops to TPUs", (
        "<h1>From Loops to TPUs</h1><p>Why GPUs and TPUs make deep learning fast, measured. This book shows every "
        "chapter as it was last run on the authors' machine; open the notebooks to measure yours.</p>"
        f"<table><tr><th>#</th><th>Chapter</th><th>What you get</th><th>Time</th></tr>{rows}</table>"
        f"<p>{escape(TIME_NOTE)}</p>"
        '<p>Teaching with it? <a href="teaching.html">The teacher guide</a>. A word you do not know? '
        '<a href="glossary.html">The glossary</a>.</p>'), _nav(-1))


def guide_html(text: str) -> str:
    """The teacher guide (Markdown) as a page; its dollar amounts stay text (no math drawn here)."""
    return _text_page("Teaching with From Loops to TPUs", text, _nav())


def glossary_html() -> str:
    """The glossary as a page, each entry under an anchor the chapters' glossary links point to."""
    entries = "".join(f'<h2 id="{t.anchor}">{escape(t.name)}</h2><p>{escape(t.definition)}</p>'
                      for t in glossary.TERMS)
    return _text_page("Glossary", f"<h1>Glossary</h1>{entries}", _nav())


def build(folder: str | Path, force: bool = False, source: Path = NOTEBOOKS) -> list[Path]:
    """Write the book into `folder`; returns the files written. Refuses the repository's own folders, and a
    folder that is not empty unless `force`; a link in `folder` where a page goes is replaced, never followed."""
    import plotly

    folder = Path(folder)
    missing = [c.file for c in CHAPTERS if not (source / c.file).is_file()]
    if missing or not GUIDE.is_file():
        raise ClassroomError(f"not found: {', '.join(missing) or GUIDE} (run this in a clone of the repository)")
    output_folder(folder, force, ROOT, f"inside the repository ({ROOT})", "the site")
    written = [folder / "plotly.min.js"]
    replace_file(written[0], (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes())
    for index, chapter in enumerate(CHAPTERS):
        written.append(folder / _page(chapter.file))
        replace_file(written[-1], chapter_html(source / chapter.file, index).encode("utf-8"))
    pages = (("index.html", index_html()), ("teaching.html", guide_html(GUIDE.read_text("utf-8"))),
             ("glossary.html", glossary_html()))
    for name, html in pages:
        written.append(folder / name)
        replace_file(written[-1], html.encode("utf-8"))
    return written
