"""`fslab site` (`fslab.report.site`): a static site over results databases. Built from
the fixture databases into a temporary folder: every page and every link in it exists,
names from the databases come out escaped, a folder it did not make is refused whole,
and the pages open offline in headless Chromium with their charts drawn."""

from __future__ import annotations

import shutil
import sqlite3
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from integrity_fixture import make_integrity_db
from report_fixture import EVIL, make_fixture_db
from test_history import _nights
from test_report import browser, charts_drawn, screenshot  # noqa: F401  (a fixture)

from fslab.cli import main
from fslab.report import site as site_module
from fslab.report.bundle import make_bundle
from fslab.report.site import MARKER, PLOTLY

SEED = Path(__file__).parent / "data" / "results-v2.db"
EVIL_STUDY = f'evil {EVIL} & "co"'
FAILED = "mkfs.xfs: <device> busy\nmore lines"


def _site(*args: str | Path) -> Any:
    return CliRunner().invoke(main, ["site", *(str(a) for a in args)])


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)


def _links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.links


def _broken(site: Path) -> list[str]:
    """Every link of every page that is not a file of the site (an anchor alone is a
    place in its own page); a link out of the site counts as broken."""
    out: list[str] = []
    for page in site.rglob("*.html"):
        for link in _links(page):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                out.append(f"{page}: {link} (leaves the site)")
                continue
            if not parts.path:
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file() or site.resolve() not in target.parents:
                out.append(f"{page}: {link}")
    return out


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The real seed database (copied: reading migrates it), the report's fixture with a
    study named with markup, and five nights of one study (a history)."""
    where = tmp_path_factory.mktemp("site-sources")
    seed = where / "seed.db"
    shutil.copyfile(SEED, seed)
    con = sqlite3.connect(seed)
    with con:  # a run that failed, as a point page lists it
        con.execute("UPDATE run SET status = 'failed', error = ? WHERE id = 7", (FAILED,))
    con.close()
    fixture = make_fixture_db(where / "fixture.db")
    con = sqlite3.connect(fixture)
    with con:
        con.execute("UPDATE study SET name = ?", (EVIL_STUDY,))
    con.close()
    nights = where / "nights"
    nights.mkdir()
    return [seed, fixture, *_nights(nights, 5)]


@pytest.fixture(scope="module")
def site(sources: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    done = _site(*sources, "-o", out)
    assert done.exit_code == 0, done.output
    assert "site: wrote" in done.output
    return out


def test_the_site_has_an_index_a_page_per_study_and_point_and_the_history(site: Path) -> None:
    assert (site / "index.html").is_file() and (site / MARKER).is_file()
    assert (site / PLOTLY).stat().st_size > 1_000_000
    index = (site / "index.html").read_text()
    studies = [p.parent for p in site.glob("*/index.html")]
    # the seed's study, the fixture's, and each of the five nights
    assert len(studies) == 7
    for study in studies:
        points = list((study / "points").glob("*.html"))
        assert points, study
        assert f'href="{study.name}/index.html"' in index
        text = (study / "index.html").read_text()
        for p in points:
            assert f'href="points/{p.name}"' in text
    histories = list(site.glob("history-*.html"))
    assert [h.name for h in histories] == ["history-nightly.html"]
    assert 'href="history-nightly.html"' in index
    # the five nights are one entry: the latest in full, the others listed
    assert index.count("(the latest of 5 passes: ") == 1
    assert "The 4 earlier passes" in index and "3 studies, 7 passes" in index
    # small studies get the whole report, loading plotly.js from the site's one copy
    report = next(site.glob("scale-seed*/report.html")).read_text()
    assert f'<script src="../{PLOTLY}"></script>' in report
    assert "Plotly.newPlot" in report and len(report) < 1_000_000


def test_every_link_of_every_page_is_a_file_of_the_site(site: Path) -> None:
    assert _broken(site) == []


def test_a_point_page_lists_each_targets_runs(site: Path) -> None:
    page = next(site.glob("scale-seed*/points/1.html")).read_text()
    assert 'class="comparison"' in page and 'class="runs"' in page
    assert "disturbed, not counted" in page
    assert '<td class="label">failed</td>' in page
    assert "mkfs.xfs: &lt;device&gt; busy</td>" in page


def test_names_from_the_database_are_escaped(site: Path) -> None:
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert EVIL not in text, page
        assert "<script>alert" not in text, page
    index = (site / "index.html").read_text()
    assert "evil btrfs&lt;script&gt;alert(" in index


def test_a_folder_it_did_not_make_is_refused_and_left_alone(
    sources: list[Path], tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    done = _site(sources[0], "-o", out)
    assert done.exit_code == 2
    assert done.output == (
        f"error: {out}: a folder that is not empty and was not made by `fslab site`\n\n"
        "hint: give a new or empty folder with -o (a site made before is replaced whole)\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


def test_a_site_it_made_is_replaced_whole(sources: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert _site(sources[0], sources[1], "-o", out).exit_code == 0
    assert _site("--results", sources[0], "-o", out).exit_code == 0
    assert len(list(out.glob("*/index.html"))) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["site"]


def test_a_bundle_is_a_source_as_its_database_is(sources: list[Path], tmp_path: Path) -> None:
    archive = tmp_path / "night-00.tar.gz"
    make_bundle(archive, sources[2])
    out = tmp_path / "site"
    done = _site(archive, sources[3], "-o", out)
    assert done.exit_code == 0, done.output
    assert len(list(out.glob("nightly*/points/*.html"))) == 2 * 2
    assert (out / "history-nightly.html").is_file()
    assert _broken(out) == []


def test_an_integrity_study_without_speed_points_has_its_page(tmp_path: Path) -> None:
    db = make_integrity_db(tmp_path / "integrity.db")
    out = tmp_path / "site"
    assert _site(db, "-o", out).exit_code == 0
    [study] = out.glob("*/index.html")
    assert "No point measured speed" in study.read_text()
    assert 'class="headlines integrity-lines"' in study.read_text()
    assert _broken(out) == []


def test_a_large_study_lists_its_points_instead_of_drawing_them(
    sources: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_module, "FULL_REPORT_RUNS", 1)
    out = tmp_path / "site"
    built = site_module.build_site([sources[0]], out, plotly_js="")
    study = out / built.studies[0].href
    assert not (study.parent / "report.html").exists()
    text = study.read_text()
    assert "report.html" not in text and "too many charts for one page" in text
    assert built.pages == 2 + len(list((study.parent / "points").glob("*.html")))
    assert _broken(out) == []


def test_bad_input_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_text("not a database")
    for source in (bogus, tmp_path / "missing.db"):
        done = _site(source, "-o", tmp_path / "out")
        assert done.exit_code == 2, done.output
        assert done.output.startswith("error: ")
    done = _site(bogus, "-o", tmp_path / "missing" / "site")
    assert done.exit_code == 2
    assert done.output.startswith(f"error: {tmp_path / 'missing' / 'site'}: the directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bogus.db"]


def test_a_damaged_database_is_named_and_nothing_is_written(
    sources: list[Path], tmp_path: Path
) -> None:
    db = tmp_path / "damaged.db"
    shutil.copy(sources[1], db)
    with db.open("r+b") as f:  # its header reads, its tables do not
        f.seek(3 * 4096)
        f.write(bytes(4 * 4096))
    done = _site("--results", db, "-o", tmp_path / "out")
    assert done.exit_code == 2
    assert done.output.startswith(f"error: {db}: the results database is damaged (")
    # (SQLite's own -wal and -shm files beside the database aside)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("damaged.db")] == []


def test_the_site_opens_offline_in_headless_chromium(
    browser: Any,  # noqa: F811
    site: Path,
    tmp_path: Path,
) -> None:
    browser.get((site / "index.html").as_uri())
    assert EVIL_STUDY in browser.execute_script("return document.body.innerText")
    # A page drawn, not a blank one: the index's screenshot (kept with FSLAB_TEST_OUTPUT).
    screenshot(browser, tmp_path / "site-index.png", 1200)
    study = next(site.glob("scale-seed*"))
    browser.get((study / "index.html").as_uri())
    assert browser.execute_script("return document.querySelectorAll('table.points tr').length")
    browser.get((study / "points" / "1.html").as_uri())
    assert browser.execute_script("return document.querySelectorAll('table.runs').length") == 2
    # the style sheet beside the pages was found
    assert (
        browser.execute_script(
            "return getComputedStyle(document.querySelector('table')).borderCollapse"
        )
        == "collapse"
    )
    assert charts_drawn(browser, study / "report.html") > 0
    assert charts_drawn(browser, site / "history-nightly.html") == 2
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == []
