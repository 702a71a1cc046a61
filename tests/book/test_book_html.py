"""The built book, inspected: the rendering failures a reader would see must not come back.

Runs on the HTML that ``make test`` builds, which it names in ``GPC_BOOK_HTML`` after building
(``GPC_BOOK_HTML=_build/test-build/_build/html pytest tests/book/test_book_html.py`` by hand); skipped
without it, so that a plain ``pytest tests`` never inspects a stale build. Checks, page by page, inside the article
(not the navigation):

- no numpy scalar reprs (``np.float64(0.523)``) where a number was glued;
- no raw TeX in link text (a ``{ref}`` to a heading that contains math);
- no unparsed MyST (``{ref}`...``, ``{glue:text}``, ``:::{``) outside code;
- every image is a numbered, captioned figure;
- every chapter links to the notation page and to at least three other chapters;
- the thebe script is included at most once; the bibliography's labels are author–year, like the
  citations;
- the Reference part has an entry for every name in ``gpc_ref.__all__`` and in each module's
  ``__all__`` (on the page of the module that defines it, linked from the page of a module that
  re-exports it), and the general index lists them.


- no solution's code prints where the reader sees it before opening the solution: a code cell with
  output right after a solution must be inside it (a gated ``solution-start`` … ``solution-end``).
"""

import os
import pathlib
import re
from html.parser import HTMLParser

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HTML = pathlib.Path(os.environ.get("GPC_BOOK_HTML", "/nonexistent"))
TOC = ROOT / "_toc.yml"
NOT_CHAPTERS = {"intro", "notation", "errata", "bibliography", "glossary", "gaussian_identities"}

pytestmark = pytest.mark.skipif(not (HTML / "book").is_dir(), reason="GPC_BOOK_HTML names no built book")


def _toc_pages():
    """The book's pages outside the Reference part (book/api/ holds one generated page per module)."""
    return re.findall(r"file:\s*book/(\w+)\s*$", TOC.read_text(), re.M)


def _chapters():
    return [page for page in _toc_pages() if page not in NOT_CHAPTERS]


class _Article(HTMLParser):
    """Collects, inside <article>: text outside code, links (href, text), and images with their figure state."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # inside <article>
        self.code = 0  # inside <pre>/<code>
        self.text = []
        self.links = []
        self._link = None
        self.images = []  # (src, inside a <figure>, caption text)
        self._figures = []  # stack of [caption text parts, images]
        self._caption = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article":
            self.depth += 1
        if not self.depth:
            return
        if tag in ("pre", "code"):
            self.code += 1
        elif tag == "a":
            self._link = [attrs.get("href") or "", []]
        elif tag == "figure":
            self._figures.append([[], []])
        elif tag == "figcaption":
            self._caption += 1
        elif tag == "img":
            if self._figures:
                self._figures[-1][1].append(attrs.get("src", ""))
            else:
                self.images.append((attrs.get("src", ""), False, ""))

    def handle_endtag(self, tag):
        if not self.depth:
            return
        if tag == "article":
            self.depth -= 1
        elif tag in ("pre", "code"):
            self.code -= 1
        elif tag == "a" and self._link is not None:
            self.links.append((self._link[0], "".join(self._link[1]).strip()))
            self._link = None
        elif tag == "figcaption":
            self._caption -= 1
        elif tag == "figure" and self._figures:
            caption, images = self._figures.pop()
            for src in images:
                self.images.append((src, True, " ".join("".join(caption).split())))

    def handle_data(self, data):
        if not self.depth:
            return
        if self._link is not None:
            self._link[1].append(data)
        if self._caption and self._figures:
            self._figures[-1][0].append(data)
        if not self.code:
            self.text.append(data)


def _parse(page):
    html = (HTML / "book" / f"{page}.html").read_text(encoding="utf-8")
    parser = _Article()
    parser.feed(html)
    return html, parser


@pytest.mark.parametrize("page", _toc_pages())
def test_no_numpy_scalar_reprs(page):
    _, article = _parse(page)
    text = "".join(article.text)
    found = re.findall(r"np\.(?:float|int)\d*\([^)]*\)", text)
    assert not found, f"{page}: glue a Python float (round(float(x), k)), not {found[:3]}"


@pytest.mark.parametrize("page", _toc_pages())
def test_no_raw_tex_in_link_text(page):
    _, article = _parse(page)
    raw = [text for _, text in article.links if re.search(r"\\\(|\\\[|\$|\\[a-zA-Z]+", text)]
    assert not raw, f"{page}: links show TeX source {raw[:3]}; give the {{ref}} an explicit text"


@pytest.mark.parametrize("page", _toc_pages())
def test_no_unparsed_markup(page):
    _, article = _parse(page)
    text = "".join(article.text)
    found = re.findall(r"\{(?:ref|numref|eq|cite|glue:text|glue:figure|glue)\}`[^`]*`|:::\{|```\{", text)
    assert not found, f"{page}: unparsed MyST {found[:3]}"
    assert "??" not in text.replace("???", ""), f"{page}: an unresolved number ('??')"


@pytest.mark.parametrize("page", _toc_pages())
def test_every_image_is_a_numbered_captioned_figure(page):
    _, article = _parse(page)
    bare = [src for src, in_figure, caption in article.images if not in_figure or not re.match(r"Fig\.?\s*\d", caption)]
    assert not bare, f"{page}: {len(bare)} image(s) without a numbered caption, e.g. {bare[:2]}"


@pytest.mark.parametrize("page", _chapters())
def test_chapter_links_notation_and_other_chapters(page):
    _, article = _parse(page)
    targets = {re.sub(r"[#?].*$", "", href).split("/")[-1].removesuffix(".html") for href, _ in article.links}
    assert "notation" in targets, f"{page} does not link the notation page"
    others = targets & (set(_chapters()) - {page})
    assert len(others) >= 3, f"{page} links only {sorted(others)} among the other chapters"


@pytest.mark.parametrize("page", _toc_pages())
def test_thebe_script_at_most_once(page):
    html, _ = _parse(page)
    assert len(re.findall(r"<script[^>]*sphinx-thebe\.js", html)) <= 1


def test_bibliography_labels_match_author_year_citations():
    html, _ = _parse("bibliography")
    labels = re.findall(r'<span class="label"><span class="fn-bracket">\[</span>([^<]*)<', html)
    assert labels, "no bibliography entries found"
    numeric = [label for label in labels if label.strip().isdigit()]
    assert not numeric, f"numbered bibliography labels {numeric[:3]} beside author-year citations"


def test_api_reference_has_an_entry_for_every_public_name():
    import importlib

    from test_api_reference import api_page
    from test_api_reference import home
    from test_api_reference import modules

    index = (HTML / "genindex.html").read_text(encoding="utf-8")
    missing, unlinked, unindexed = [], [], []
    for module in modules():
        page = (HTML / f"{api_page(module)}.html").read_text(encoding="utf-8")
        for name in importlib.import_module(module).__all__:
            target = f"{home(module, name)}.{name}"
            home_page = (HTML / f"{api_page(home(module, name))}.html").read_text(encoding="utf-8")
            if f'id="{target}"' not in home_page:
                missing.append(target)
            if not re.search(rf'href="[^"]*#{re.escape(target)}"', page):
                unlinked.append(f"{module}: {name}")
            if f"#{target}" not in index:
                unindexed.append(target)
    assert not missing, f"no entry for {missing[:5]} ({len(missing)} in all)"
    assert not unlinked, f"the module pages do not link {unlinked[:5]} ({len(unlinked)} in all)"
    assert not unindexed, f"genindex does not list {unindexed[:5]} ({len(unindexed)} in all)"


def _visible_output(cell):
    """The text (or image) a code cell shows under its input, or "" if it shows nothing."""
    outputs = cell.select("div.cell_output")
    if any(output.find("img") for output in outputs):
        return "[an image]"
    return " ".join(" ".join(output.get_text(" ").split()) for output in outputs).strip()


@pytest.mark.parametrize("page", _chapters())
def test_solution_output_stays_in_its_dropdown(page):
    """A solution whose code follows it as a separate cell leaves that cell's output standing open under
    the exercise, however the solution folds: the cells must sit inside a gated solution instead."""
    from bs4 import BeautifulSoup  # a dependency of the book's theme (pydata-sphinx-theme)

    html, _ = _parse(page)
    article = BeautifulSoup(html, "html.parser").find("article")
    leaks = []
    for solution in article.select("div.solution"):
        label = solution.get("id", "?")
        sibling = solution.find_next_sibling()
        while sibling is not None and "cell" in (sibling.get("class") or []):
            shown = _visible_output(sibling)
            if shown:
                leaks.append(f"{label}: {shown[:80]!r}")
            sibling = sibling.find_next_sibling()
    assert not leaks, f"{page}: output of a solution's code outside the solution: {leaks[:3]}"


@pytest.mark.parametrize(
    ("page", "printed"),
    [
        ("ep", "site precision negative for z below"),
        ("ep", "expected-error rule after"),
        ("ep", "log Z_EP, eps=0"),
        ("ivm", "max |μ − μ_VB|: "),
        ("vb_probit_experiments", "draws: log evidence"),
        ("laplace_hmc", "τ_int estimated"),
    ],
)
def test_known_solution_outputs_are_inside_their_solution(page, printed):
    """The outputs that issue 22 found leaking (and one gated example): present, and only in a solution."""
    from bs4 import BeautifulSoup

    html, _ = _parse(page)
    article = BeautifulSoup(html, "html.parser").find("article")
    outputs = [output for output in article.select("div.cell_output") if printed in output.get_text()]
    assert outputs, f"{page}: no output containing {printed!r}"
    for output in outputs:
        assert output.find_parent("div", class_="solution") is not None, f"{page}: {printed!r} outside a solution"


@pytest.mark.parametrize("page", _toc_pages())
def test_no_section_named_by_raw_label(page):
    """Notes written by code name sections by label; book/_ext/section_links.py makes them links."""
    _, article = _parse(page)
    text = "".join(article.text)
    prefixes = "sec|vbx|vbp|ep|ivm|laph|lapb|lapm|vgc|cmp|gpr|cls|errata"
    found = re.findall(rf"\bsection (?:{prefixes})-[a-z0-9-]+", text)
    assert not found, f"{page}: sections named by raw label: {found[:3]}"


def _box_numbers():
    """The number the reader sees for each algorithm box, by its label: {"lapb-alg-newton": "4.1", ...}."""
    numbers = {}
    for page in (HTML / "book").glob("*.html"):
        html = page.read_text(encoding="utf-8")
        pattern = r'class="proof algorithm[^"]*" id="([\w-]+)">\s*<p class="admonition-title"><span class="caption-number">Algorithm ([\d.]+) '
        for label, number in re.findall(pattern, html):
            numbers[label] = number
    return numbers


def test_code_cites_each_box_by_the_number_the_reader_sees():
    """A docstring or comment in gpc_ref that names "Algorithm N.M (label)" names the box the book numbers N.M."""
    import gpc_ref

    numbers = _box_numbers()
    assert "lapb-alg-newton" in numbers
    cited = []
    sources = list(pathlib.Path(gpc_ref.__file__).parent.rglob("*.py"))
    for source in sources:
        for number, label in re.findall(
            r"Algorithm (\d+\.\d+) \(([\w-]+-alg[\w-]*)\)", source.read_text(encoding="utf-8")
        ):
            cited.append(label)
            assert label in numbers, f"{source.name}: cites box {label}, which the book does not have"
            assert numbers[label] == number, (
                f"{source.name}: cites {label} as Algorithm {number}; the book numbers it {numbers[label]}"
            )
    assert len(cited) >= 5


def test_selfcheck_names_each_box_as_the_book_numbers_it():
    """gpc_ref.selfcheck speaks the book's words (issue 31): "Algorithm N.M of chapter C, <title> (book/<file>)";
    the box must carry that number on that chapter's page, and the chapter that number."""
    from gpc_ref import selfcheck

    for name, spec in selfcheck._CHECKS.items():
        match = re.fullmatch(r"Algorithm (\d+)\.(\d+) of chapter (\d+), (.+) \(book/([a-z_]+)\.ipynb\)", spec.box)
        assert match, f"{name}: {spec.box!r}"
        chapter, number, page = match[3], f"{match[1]}.{match[2]}", match[5]
        assert match[1] == chapter, name
        html = (HTML / "book" / f"{page}.html").read_text(encoding="utf-8")
        assert f'<span class="caption-number">Algorithm {number} ' in html, f"{name}: no Algorithm {number} on {page}"
        assert spec.data, f"{name}: the check does not say which likelihood and labels its cases use"
