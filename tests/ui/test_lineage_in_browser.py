"""The Dagster UI in a real browser: the webserver on localhost, headless Chromium (Debian's package).

Builds a home with one night run on a persistent instance, starts `dagster-webserver` on a free
port, renders pages with `chromium --headless --dump-dom` (the UI is a JavaScript app: the DOM is
read after it has rendered), and asserts that the upstream lineage of the health table shows the
ingest asset, the recall view and the health table, and that the recall view's checks show their
results. Screenshots go to reports/ui/ as test artifacts. Run by `make test-ui` (needs chromium:
`make browser` installs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import date
from pathlib import Path

import pytest

from memcurator import demo
from memcurator.home import HOME_ENV, Home
from memcurator.runner import run_nightly

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "reports" / "ui"
NIGHT = date(2026, 11, 28)


def _chromium() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    pytest.fail("no Chromium found: `make browser` installs Debian's chromium (or set CHROMIUM)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _browser(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    shutil.rmtree(profile, ignore_errors=True)
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
                           "--window-size=1600,1000", *args], capture_output=True, timeout=180)


def _render(url: str, profile: Path, needles: list[str]) -> str:
    """The rendered DOM once every needle is in it (the UI loads its data after the first paint)."""
    dom = ""
    for budget in (15_000, 30_000, 60_000):
        dom = _browser([f"--virtual-time-budget={budget}", "--dump-dom", url], profile).stdout.decode(errors="replace")
        if all(n in dom for n in needles):
            break
    return dom


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui")
    home = Home.from_env(root / "home").ensure()
    env = os.environ | {HOME_ENV: str(home.root), "DAGSTER_HOME": str(home.dagster_home)}
    saved = {k: os.environ.get(k) for k in (HOME_ENV, "DAGSTER_HOME")}
    os.environ.update({HOME_ENV: str(home.root), "DAGSTER_HOME": str(home.dagster_home)})
    try:
        demo.generate(home.landing, home.truth, writes=1_500, namespaces=3, days=20, seed=3, end=NIGHT)
        assert run_nightly(home, NIGHT.isoformat()).success
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    port = _free_port()
    server = subprocess.Popen([str(Path(sys.executable).with_name("dagster-webserver")), "-w", str(ROOT / "workspace.yaml"),
                               "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "/server_info", timeout=2)
                break
            except OSError:
                assert server.poll() is None, "the webserver exited"
                time.sleep(1)
        else:
            pytest.fail("the webserver did not answer within 120 s")
        yield base, root
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_lineage_from_ingest_to_recall_view_and_health_is_rendered(ui):
    base, root = ui
    url = f"{base}/assets/mart/store_health?view=lineage&lineageScope=upstream&lineageDepth=12"
    dom = _render(url, root / "profile", [">events<", "recall_view", "curator_decisions"])
    # graph nodes: the ingest asset (raw/events), the recall view and the health table with its group
    for node in (">events<", ">recall_view<", ">store_health<", ">entry_lifecycle<", ">entry_scores<"):
        assert node in dom, node
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _browser(["--virtual-time-budget=30000", f"--screenshot={ARTIFACTS / 'lineage.png'}", url], root / "profile")
    assert (ARTIFACTS / "lineage.png").stat().st_size > 20_000


def test_check_results_are_visible_on_the_recall_view(ui):
    base, root = ui
    url = f"{base}/assets/mart/recall_view?view=checks"
    dom = _render(url, root / "profile", ["recall_view_expectations", "Succeeded"])
    assert "recall_view_expectations" in dom and "no_contested_en" in dom
    assert dom.count("Succeeded") >= 4  # blocking checks passed, shown with their result
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _browser(["--virtual-time-budget=30000", f"--screenshot={ARTIFACTS / 'checks.png'}", url], root / "profile")
    assert (ARTIFACTS / "checks.png").stat().st_size > 20_000
