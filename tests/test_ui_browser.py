"""The workbench in a real browser: Debian's headless Chromium driven by Playwright (no downloaded
browser). The token and CSRF refusals; in the slow tier, the whole flow on Adult (open, roles, check,
explore, release, report, the spec downloaded, loaded into a new page and run again by `anonydb
release`), full-domain's lattice, and the 1M-row census: the page in under 2 s, a run's progress,
and its cancellation.

ANONYDB_UI_SCREENSHOTS=docs/img writes each screen's screenshot where docs/ui.md shows it."""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("nicegui", reason="the workbench needs NiceGUI (pip install 'anonydb[ui]')")
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (the test extra has it)")

from conftest import need_shared  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = os.environ.get("ANONYDB_UI_SCREENSHOTS")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (apt install chromium)")


class Server:
    """`anonydb ui` in a subprocess; ``url`` holds its token."""

    def __init__(self, db: Path | None, cwd: Path, *extra: str):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # NiceGUI reads it as its own
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # test mode
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "anonydb", "ui", *(["--db", str(db)] if db else []), *extra], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("anonydb workbench: http://127.0.0.1:"), line + self.proc.stderr.read()
        self.url = line.split(": ", 1)[1].strip()
        self.base = self.url.split("/?")[0]
        self.token = self.url.split("token=")[1]
        for _ in range(200):
            try:
                urllib.request.urlopen(self.url, timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        self.ready = time.perf_counter() - self.started

    def stop(self) -> str:
        self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


@pytest.fixture
def adult_db(tmp_path):
    import duckdb

    adult = need_shared() / "adult" / "adult.csv"
    db = tmp_path / "adult.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE adult AS FROM read_csv('{adult}')")
    con.close()
    return db


@pytest.fixture
def browser():
    with playwright.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def shot(page, name: str, tmp: Path) -> None:
    folder = Path(SHOTS) if SHOTS else tmp
    folder.mkdir(parents=True, exist_ok=True)
    time.sleep(0.6)  # the charts' animations end
    page.screenshot(path=str(folder / f"ui-{name}.png"), full_page=True)


@pytest.mark.slow
def test_the_whole_flow_on_adult(adult_db, tmp_path, browser):
    """Open Adult, give the roles, check k = 5 and l = 3 (the raw table fails), explore k in 5..50
    with l = 3, pick the passing release of least loss, write it, see its report, download the spec;
    then `anonydb release` on the downloaded spec writes the same rows. Bad input on the way (k =
    "abc") is a message in the page, and the page goes on."""
    from playwright.sync_api import expect

    srv = Server(adult_db, tmp_path)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.goto(srv.url)
        page.get_by_role("cell", name="adult", exact=True).click()
        expect(page.get_by_test_id("message")).to_contain_text("adult: 9 columns")
        page.get_by_role("cell", name="age", exact=True).click()
        expect(page.get_by_test_id("profile")).to_contain_text("salary-class")
        shot(page, "data", tmp_path)
        page.get_by_role("tab", name="Roles").click()
        for c in ("age", "sex", "race", "education", "marital-status"):
            page.get_by_test_id(f"role-{c}").get_by_text("qi", exact=True).click()
        page.get_by_test_id("role-occupation").get_by_text("sensitive", exact=True).click()
        expect(page.get_by_test_id("spec")).to_contain_text("occupation: sensitive")
        shot(page, "roles", tmp_path)
        page.get_by_role("tab", name="Check & risk").click()
        page.get_by_test_id("model-k").fill("abc")
        page.get_by_test_id("check").click()
        expect(page.get_by_test_id("message")).to_contain_text("invalid int value: 'abc'")
        page.get_by_test_id("model-k").fill("5")
        page.get_by_test_id("model-l").fill("3")
        page.get_by_test_id("check").click()
        expect(page.get_by_test_id("verdicts")).to_contain_text("FAILS", timeout=30_000)
        expect(page.get_by_test_id("message")).to_have_text("a model fails: see the verdicts")
        expect(page.get_by_test_id("risk")).to_contain_text("prosecutor: highest")
        shot(page, "check", tmp_path)
        page.get_by_role("tab", name="Explore").click()
        page.get_by_test_id("ks").fill("5,10,20,50")
        page.get_by_test_id("explore").click()
        points = page.get_by_test_id("points")
        expect(points.locator("tbody tr")).to_have_count(4, timeout=60_000)
        rows = [r.locator("td").all_inner_texts() for r in points.locator("tbody tr").all()]
        passing = [(float(r[2]), r) for r in rows if r[1] == "holds"]
        best = min(passing)[1]
        assert best[0] == "k=5" and all(r[1] == "holds" for r in rows)
        points.locator("tbody tr").nth(rows.index(best)).click()
        expect(page.get_by_test_id("point")).to_contain_text("k = 5", timeout=20_000)
        shot(page, "explore", tmp_path)
        page.get_by_role("tab", name="Release").click()
        expect(page.get_by_test_id("chosen")).to_contain_text("k = 5")
        page.get_by_test_id("write").click()
        expect(page.get_by_test_id("verdict")).to_contain_text("30162 rows written to release", timeout=30_000)
        report = page.frame_locator("[data-testid=report]")
        expect(report.locator("#verdict")).to_contain_text("k-anonymity with k = 5 holds")
        shot(page, "release", tmp_path)
        page.get_by_role("tab", name="Roles").click()
        with page.expect_download() as got:
            page.get_by_test_id("download-spec").click()
        spec = tmp_path / "release.yaml"
        got.value.save_as(spec)
        fresh = browser.new_page(viewport={"width": 1400, "height": 1000})  # loading the spec fills a new page
        fresh.goto(srv.url)
        fresh.get_by_role("tab", name="Roles").click()
        fresh.get_by_test_id("load-spec").locator("input[type=file]").set_input_files(str(spec))
        expect(fresh.get_by_test_id("message")).to_contain_text("spec loaded", timeout=20_000)
        expect(fresh.get_by_test_id("spec")).to_contain_text("occupation: sensitive")
        expect(fresh.get_by_test_id("spec")).to_contain_text("privacy: {k: 5, l: 3}")
    finally:
        err = srv.stop()
    assert "Traceback" not in err, err
    import duckdb
    import yaml

    text = yaml.safe_load(spec.read_text())
    assert text["privacy"] == {"k": 5, "l": 3} and text["attributes"]["occupation"] == "sensitive"
    text["output"] = {"table": "release_cli"}
    spec.write_text(yaml.safe_dump(text, sort_keys=False))  # the QIs' order is Mondrian's order of ties
    r = subprocess.run([sys.executable, "-m", "anonydb", "release", str(spec)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(adult_db), read_only=True)
    cols = "sex, age, race, \"marital-status\", education, occupation"
    ui_rows = collections.Counter(con.execute(f"SELECT {cols} FROM release").fetchall())
    cli_rows = collections.Counter(con.execute(f"SELECT {cols} FROM release_cli").fetchall())
    assert ui_rows == cli_rows and sum(ui_rows.values()) == 30162


@pytest.mark.slow
def test_full_domains_lattice_on_adult(adult_db, tmp_path, browser):
    """Full-domain's explore is its lattice: age, sex and race with Adult's ARX hierarchies give
    5 x 2 x 2 = 20 nodes, each listed and plotted; a node shows its generalized rows."""
    from playwright.sync_api import expect

    adult = need_shared() / "adult"
    srv = Server(adult_db, tmp_path)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(srv.url)
        page.get_by_role("cell", name="adult", exact=True).click()
        expect(page.get_by_test_id("message")).to_contain_text("adult: 9 columns")
        page.get_by_role("tab", name="Roles").click()
        for c in ("age", "sex", "race"):
            page.get_by_test_id(f"role-{c}").get_by_text("qi", exact=True).click()
            page.get_by_test_id(f"hier-{c}").fill(str(adult / f"adult_hierarchy_{c}.csv"))
        page.get_by_test_id("role-occupation").get_by_text("sensitive", exact=True).click()
        page.get_by_test_id("method").click()
        page.get_by_role("option", name="fulldomain").click()
        expect(page.get_by_test_id("spec")).to_contain_text("method: fulldomain")
        page.get_by_role("tab", name="Check & risk").click()
        page.get_by_test_id("model-k").fill("5")
        page.get_by_role("tab", name="Explore").click()
        page.get_by_test_id("explore").click()
        points = page.get_by_test_id("points")
        expect(points.locator("tbody tr")).to_have_count(20, timeout=60_000)
        first = points.locator("tbody tr").first.locator("td").all_inner_texts()
        assert first[1] == "holds" and "age:" in first[0]
        points.locator("tbody tr").first.click()
        expect(page.get_by_test_id("point")).to_contain_text(first[0], timeout=20_000)
        shot(page, "lattice", tmp_path)
    finally:
        srv.stop()


def _request(url: str, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, str]:
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode(errors="replace")


def _upgrade(base: str, cookie: str, origin: str) -> str:
    """The status line of a websocket handshake to socket.io's endpoint from ``origin``."""
    import socket

    host, port = base.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall((f"GET /_nicegui_ws/socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: {host}:{port}\r\n"
                   f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: {origin}\r\nCookie: {cookie}\r\n\r\n"
                   ).encode())
        return s.recv(4096).decode(errors="replace")


def test_the_token_and_cross_site_requests_are_refused(adult_db, tmp_path, browser):
    """No token, a wrong token: 403. The token once: 200 and an HttpOnly SameSite=Strict cookie, then
    the cookie alone. A state-changing request or a websocket from another origin is 403 even with
    the cookie; no response allows every origin; the browser's page from the token works."""
    srv = Server(adult_db, tmp_path)
    try:
        starts = [srv.ready]
        for _ in range(2):  # the best of three starts: a busy machine slows one, not the command
            again = Server(None, tmp_path)  # in memory: the first server holds the file
            starts.append(again.ready)
            again.stop()
        assert min(starts) < 2.0, f"the workbench took {min(starts):.2f} s at best to serve ({starts})"
        assert _request(srv.base + "/")[0] == 403
        assert _request(srv.base + "/?token=wrong")[0] == 403
        status, headers, _ = _request(srv.url)
        assert status == 200
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        jar = {"Cookie": cookie.split(";")[0]}
        assert _request(srv.base + "/report/nothing", headers=jar)[0] == 404  # through the door, no such report
        poll = srv.base + "/_nicegui_ws/socket.io/?EIO=4&transport=polling"
        status, headers, _ = _request(poll, headers={**jar, "Origin": srv.base})
        assert status == 200 and headers.get("access-control-allow-origin") in (None, srv.base)
        sid_less = _request(poll, "POST", headers={**jar, "Origin": "http://evil.example"})
        assert sid_less[0] == 403 and "cross-site" in sid_less[2]
        assert _request(poll, "POST", headers={**jar, "Referer": "http://evil.example/x"})[0] == 403
        status, headers, _ = _request(poll, headers={**jar, "Origin": "http://evil.example"})
        assert headers.get("access-control-allow-origin") != "*"
        assert _upgrade(srv.base, jar["Cookie"], "http://evil.example").startswith("HTTP/1.1 403")
        assert _upgrade(srv.base, jar["Cookie"], srv.base).startswith("HTTP/1.1 101")  # its own page: accepted
        page = browser.new_page()
        page.goto(srv.base + "/")
        assert "open the workbench with the URL" in page.content()
        page.goto(srv.url)
        page.get_by_role("cell", name="adult", exact=True).click()
        from playwright.sync_api import expect

        expect(page.get_by_test_id("message")).to_contain_text("adult: 9 columns")
    finally:
        err = srv.stop()
    assert srv.token not in err  # never logged


def test_listening_beyond_this_machine_is_warned(adult_db, tmp_path):
    srv = Server(adult_db, tmp_path, "--host", "0.0.0.0")
    err = srv.stop()
    assert "anonydb: warning: --host 0.0.0.0 lets other machines reach the workbench" in err
    assert srv.url.startswith("http://127.0.0.1:") and srv.token not in err


@pytest.mark.slow
def test_a_1m_census_shows_fast_and_a_run_shows_progress_and_cancels(tmp_path, browser):
    """The synthetic census of 1M rows: the page lists it within 2 s of opening; a Mondrian
    exploration shows its phase and progress in the header, and Cancel stops it with nothing
    written."""
    import anonydb
    from anonydb.datasets import synthetic_census
    from playwright.sync_api import expect

    db = tmp_path / "census.duckdb"
    eng = anonydb.connect(str(db))
    synthetic_census(eng, "census", rows=1_000_000)
    eng.close()
    srv = Server(db, tmp_path)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        page.goto(srv.url)
        expect(page.get_by_role("cell", name="census", exact=True)).to_be_visible()
        shown = time.perf_counter() - t0
        assert shown < 2.0, f"the table list took {shown:.2f} s"
        page.get_by_role("cell", name="census", exact=True).click()
        expect(page.get_by_test_id("message")).to_contain_text("census: 13 columns", timeout=20_000)
        page.get_by_role("tab", name="Roles").click()
        for c in ("age", "sex", "race", "marital_status", "education", "workclass", "zip"):
            page.get_by_test_id(f"role-{c}").get_by_text("qi", exact=True).click()
        page.get_by_test_id("role-occupation").get_by_text("sensitive", exact=True).click()
        page.get_by_role("tab", name="Explore").click()
        page.get_by_test_id("ks").fill("2,3,4,5,6,7,8,9,10")
        page.get_by_test_id("explore").click()
        expect(page.get_by_test_id("phase")).to_contain_text("explore: ", timeout=20_000), \
            page.get_by_test_id("message").inner_text()
        expect(page.get_by_test_id("cancel")).to_be_visible()
        shot(page, "progress", tmp_path)
        page.get_by_test_id("cancel").click()
        expect(page.get_by_test_id("message")).to_contain_text("cancelled", timeout=120_000)
        expect(page.get_by_test_id("phase")).to_contain_text("cancelled")
    finally:
        srv.stop()
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    left = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name LIKE '%anonydb_ui_explore_%'"
                       ).fetchone()[0]
    assert left == 0
