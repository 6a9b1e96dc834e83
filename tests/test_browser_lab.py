"""Chapters 00 and 02 in a real JupyterLab, in Debian's headless Chromium (CI installs it in .ci/run; no browser is
downloaded), driven over the DevTools protocol: opening a chapter leaves it unmodified, every cell runs without
an error, every figure draws, the explorer renders as controls and redraws when its slider moves, and no request
leaves this machine. A failure saves a screenshot in browser-screenshots/ (kept by CI as an artifact)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = ROOT / "browser-screenshots"
TOKEN = "loops-to-tpus-test"

pytestmark = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                reason="no Chromium here (CI installs Debian's chromium in .ci/run)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, seconds: float) -> bytes:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


class Browser:
    """A headless Chromium page, spoken to over the DevTools protocol (websocket-client comes with Jupyter)."""

    def __init__(self, profile: Path) -> None:
        import websocket

        port = _free_port()
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--proxy-server=127.0.0.1:9", "--window-size=1280,900",
             f"--remote-debugging-port={port}", "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:  # a browser that cannot be driven is stopped, not left running
            pages = json.loads(_wait_for(f"http://127.0.0.1:{port}/json/list", 30))
            page = next(p for p in pages if p.get("type") == "page")
            # no Origin header: Chromium refuses DevTools connections from an origin it was not told to allow (403)
            self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=120, suppress_origin=True)
        except BaseException:
            self.process.kill()
            self.process.wait()
            raise
        self.next_id, self.events = 0, []
        self.call("Network.enable")
        self.call("Page.enable")

    def call(self, method: str, **params: object) -> dict:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def js(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def until(self, expression: str, seconds: float, what: str) -> object:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.5)
        raise AssertionError(f"waited {seconds:g} s for {what}")

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, name: str) -> None:
        import base64

        SCREENSHOTS.mkdir(exist_ok=True)
        (SCREENSHOTS / f"{name}.png").write_bytes(base64.b64decode(self.call("Page.captureScreenshot")["data"]))

    def close(self) -> None:
        self.socket.close()
        self.process.kill()
        self.process.wait(10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a copy of the chapters, every notebook cell rendered (no windowing), the app reachable."""
    assert CHROMIUM, "CI must have Chromium: .ci/run installs Debian's"
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    settings = root / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}", "--LabApp.expose_app_in_browser=True",
         f"--LabApp.user_settings_dir={root / 'settings'}", f"--LabApp.workspaces_dir={root / 'workspaces'}",
         "--allow-root"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "MALLOC_ARENA_MAX": "2", "JUPYTER_CONFIG_DIR": str(root / "config")})
    try:
        _wait_for(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", 60)
        browser = Browser(root / "profile")
        try:
            yield browser, port, root
        finally:
            browser.close()
    finally:
        server.terminate()
        server.wait(30)


def _notebook(chapter: str) -> str:
    """JavaScript for the notebook panel of `chapter` (a headless page has no focused 'current' widget)."""
    return (f"Array.from(jupyterapp.shell.widgets('main'))"
            f".find(w => w.context && w.context.path.endsWith('{chapter}'))")


@pytest.mark.parametrize("chapter", ["00_start_here.ipynb", "02_vectorised_numpy.ipynb"])
def test_a_chapter_runs_in_jupyterlab_draws_its_figures_and_stays_on_this_machine(lab, chapter) -> None:
    browser, port, root = lab
    before = (root / "notebooks" / chapter).read_bytes()
    panel = _notebook(chapter)
    try:
        browser.call("Page.navigate", url=f"http://127.0.0.1:{port}/lab/tree/notebooks/{chapter}?token={TOKEN}")
        browser.until(f"(() => {{ const w = window.jupyterapp && {panel}; return !!(w && w.context.isReady && "
                      "w.sessionContext.session && w.sessionContext.session.kernel); })()", 90,
                      "the notebook and its kernel")
        time.sleep(3)  # time for any renderer to write into the model (plotly's extension adds PNGs if missing)
        assert browser.js(f"{panel}.context.model.dirty") is False, "opening the chapter modified it"
        assert (root / "notebooks" / chapter).read_bytes() == before

        browser.js(f"(() => {{ const w = {panel}; jupyterapp.shell.activateById(w.id); "
                   "return jupyterapp.commands.execute('notebook:run-all-cells'); })()")
        browser.until(f"""(() => {{ const w = {panel}; let done = true;
            Array.from(w.content.model.cells).forEach(c => {{ if (c.type === 'code' && c.sharedModel.source.trim()
                && c.executionCount == null) done = false; }});
            return done && w.sessionContext.session.kernel.status === 'idle'; }})()""", 240, "every cell to run")
        outputs = browser.js(f"""(() => {{ const out = [];
            Array.from({panel}.content.model.cells).forEach(c => {{
                if (c.type === 'code') out.push(...c.outputs.toJSON()); }});
            return out.map(o => ({{type: o.output_type, mimes: Object.keys(o.data || {{}})}})); }})()""")
        assert not [o for o in outputs if o["type"] == "error"], "a cell errored"
        figures = sum("application/vnd.plotly.v1+json" in o["mimes"] for o in outputs)
        assert figures >= 2
        for index in range(browser.js("document.querySelectorAll('.jp-RenderedPlotly').length")):
            # jupyterlab-plotly draws a figure when it comes into view
            browser.js(f"document.querySelectorAll('.jp-RenderedPlotly')[{index}].scrollIntoView()")
            time.sleep(0.5)
        drawn = browser.until(f"""(() => {{ const n = document.querySelectorAll(
            '.jp-RenderedPlotly .main-svg').length; return n >= 2 * {figures} ? n : 0; }})()""",
                              60, f"{figures} figures to draw")
        assert drawn

        if any("application/vnd.jupyter.widget-view+json" in o["mimes"] for o in outputs):
            message = "Array.from(document.querySelectorAll('.widget-html-content')).map(e => e.innerText)" \
                      ".find(t => t.startsWith('n='))"
            start = browser.until(message, 60, "the explorer's controls and its line of numbers")
            assert browser.js("document.querySelectorAll('.jupyter-widgets .noUi-handle, .widget-slider').length")
            browser.js("document.querySelector('.jupyter-widgets .noUi-handle').focus()")
            for kind in ("keyDown", "keyUp"):
                browser.call("Input.dispatchKeyEvent", type=kind, key="ArrowRight", code="ArrowRight",
                             windowsVirtualKeyCode=39)
            changed = f"(() => {{ const t = {message}; return t && t !== {json.dumps(start)} ? t : ''; }})()"
            moved = browser.until(changed, 60, "the explorer to re-measure after the slider moved")
            assert moved.split(",")[0] != start.split(",")[0]

        outside = [u for u in browser.requests() if not u.startswith((f"http://127.0.0.1:{port}/", "data:", "blob:",
                                                                      "about:", f"ws://127.0.0.1:{port}/"))]
        assert not outside, f"requests left this machine: {outside[:5]}"
    except BaseException:
        browser.screenshot(chapter.removesuffix(".ipynb"))
        raise
