"""`--mllm-html`: the report a person opens, checked as a file and in a real headless Chromium."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

OUT = Path(__file__).resolve().parents[2] / "out"  # screenshots are kept here when the folder exists
SCRIPT = '<script>document.title="pwned";document.body.insertAdjacentHTML("beforeend","<p id=pwned>x</p>")</script>'
IMAGE = "<img src=x onerror=\"document.title='pwned'\">"
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def test_html_option_writes_a_self_contained_report(pytester: pytest.Pytester) -> None:
    report = pytester.path / "reports" / "run.html"
    # in a subprocess: an in-process run would drop matplotlib from sys.modules, which cannot load twice
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=baseline:random", "--mllm-bench=shapes",
                                           f"--mllm-html={report}")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"*HTML report written to {report}*"])
    html = report.read_text(encoding="utf-8")
    assert '<table class="scores">' in html and "[perception]" in html and "overall" in html
    assert "<svg" in html and "Accuracy per task" in html
    # every score with its 95 % interval: "±" in the score's unit, bounds and method on hover, one note saying so
    assert re.search(r'<td class="num headline">\d+\.\d\d<span class="muted pm" title="95 % interval: \d+\.\d\d to '
                     r'\d+\.\d\d %; standard error \d+\.\d\d pp \(Wilson score interval\)"> ±\d+\.\d</span>', html)
    assert html.count('class="muted pm"') > 20 and "± is half the width of the score&#39;s 95 % interval" in html
    assert 'id="incorrect"' in html and 'src="data:image/jpeg;base64,' in html  # thumbnails of wrong answers
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    assert not re.search(r"""url\(\s*["']?(?!#)""", html)


# -- in a real browser ---------------------------------------------------------------------


class Chromium:
    """Headless Chromium driven over the DevTools protocol through a pipe: no port, no network."""

    def __init__(self, binary: str, profile: Path) -> None:
        commands, self._commands = os.pipe()
        self._replies, replies = os.pipe()

        def child() -> None:  # the protocol's pipe ends are fds 3 and 4 of the browser
            moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (commands, replies)]
            os.dup2(moved[0], 3)
            os.dup2(moved[1], 4)

        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=child, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(commands)
        os.close(replies)
        self._buffer = b""
        self._last_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""

    def call(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        """Send a command (to the attached page once there is one) and return its result."""
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, event: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            self.events.append(self._next(deadline))

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if not select.select([self._replies], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def open(self, url: str, width: int = 1280, height: int = 2000) -> None:
        """A new page at `url` with a `width`×`height` viewport, once it has loaded."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Uncaught exceptions, console errors and warnings, and browser log errors (CSP violations…)."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails']}")
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning", "assert"):
                found.append(f"console.{params['type']}: {params['args']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                found.append(f"log {params['entry']['level']}: {params['entry']['text']}")
        return found

    def requested(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        if OUT.is_dir():
            shutil.copyfile(path, OUT / path.name)

    def close(self) -> None:
        with contextlib.suppress(EOFError, TimeoutError, OSError):
            self.call("Browser.close", timeout=10)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Chromium]:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("the HTML report's browser test needs Chromium: apt-get update && apt-get install -y chromium "
                    "(Debian's package; CI's .ci/run installs it)", pytrace=False)
    browser = Chromium(binary, tmp_path / "chromium-profile")
    yield browser
    browser.close()


def run_pytest(cwd: Path, *args: str) -> None:
    """A pytest run of the plugin in a fresh process, as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """first.json (random answers), then second.json and second.html replaying them with two answers
    that were right now wrong and carrying markup meant to run."""
    folder = tmp_path_factory.mktemp("replayed")
    run_pytest(folder, "--mllm=baseline:random", "--mllm-bench=shapes", "--mllm-json=first.json")
    records = json.loads((folder / "first.json").read_text())["records"]
    right = [r["id"] for r in records if r["status"] == "correct" and r["answer"] == "yes"][:2]
    injected = {right[0]: f"No {SCRIPT}", right[1]: f"No {IMAGE}"}
    lines = [json.dumps({"id": r["id"], "response": injected.get(r["id"], r["response"])}) for r in records]
    (folder / "preds.jsonl").write_text("\n".join(lines) + "\n")
    run_pytest(folder, "--mllm=replay:preds.jsonl", "--mllm-bench=shapes", "--mllm-json=second.json",
               "--mllm-html=second.html")
    return folder


def assert_clean_and_inert(browser: Chromium, title_start: str) -> None:
    """No error or warning, nothing fetched but the page and its data images, no injected markup ran."""
    assert browser.problems() == []
    requested = browser.requested()
    assert requested and all(url.startswith(("file:", "data:image/")) for url in requested), requested
    assert len([url for url in requested if url.startswith("file:")]) == 1
    assert browser.evaluate("document.title").startswith(title_start)
    assert browser.evaluate("document.getElementById('pwned') === null")
    text = browser.evaluate("document.body.innerText")
    assert SCRIPT in text and IMAGE in text  # shown as text


def test_the_report_reads_well_in_a_real_browser(replayed: Path, chromium: Chromium, tmp_path: Path) -> None:
    chromium.open((replayed / "second.html").as_uri())
    assert_clean_and_inert(chromium, "pytest-mllm · replay:")
    assert chromium.evaluate("document.querySelectorAll('table.scores tr').length") > 5
    tooltips = chromium.evaluate("[...document.querySelectorAll('table.scores tr.overall .pm')].map(s => s.title)")
    assert len(tooltips) >= 3 and all(t.startswith("95 % interval: ") for t in tooltips), tooltips
    widths = chromium.evaluate("[...document.querySelectorAll('figure.chart svg')]"
                               ".map(s => s.getBoundingClientRect().width)")
    assert len(widths) == 2 and min(widths) > 300, widths  # per task and per category
    loaded = chromium.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert len(loaded) > 100 and all(loaded)  # the thumbnails of the wrong answers
    chromium.screenshot(tmp_path / "html_report.png")

    wrong = [r for r in json.loads((replayed / "second.json").read_text())["records"] if r["status"] == "incorrect"]
    choice = sum(1 for r in wrong if r["task"] == "choice")
    shown = """(() => { const c = document.querySelector('#incorrect .shown-count').textContent;
        const v = [...document.querySelectorAll('#incorrect .sample')].filter(s => s.offsetParent !== null).length;
        return [Number(c), v]; })()"""
    assert chromium.evaluate(shown) == [len(wrong), len(wrong)]
    chromium.evaluate("""(() => { const s = document.querySelector('#incorrect select[data-key=task]');
        s.value = 'shapes::choice'; s.dispatchEvent(new Event('change')); })()""")
    assert chromium.evaluate(shown) == [choice, choice]
    chromium.evaluate("""(() => { const s = document.querySelector('#incorrect select[data-key=task]');
        s.value = ''; s.dispatchEvent(new Event('change'));
        const i = document.querySelector('#incorrect input[type=search]');
        i.value = 'insertAdjacentHTML'; i.dispatchEvent(new Event('input')); })()""")
    assert chromium.evaluate(shown) == [1, 1]  # the sample whose response carries the script
    assert chromium.problems() == []


def test_the_comparison_report_reads_well_in_a_real_browser(replayed: Path, chromium: Chromium,
                                                            tmp_path: Path) -> None:
    from pytest_mllm.report.compare import main

    report = tmp_path / "compare.html"
    assert main([str(replayed / "first.json"), str(replayed / "second.json"), "--html", str(report)]) == 0
    chromium.open(report.as_uri())
    assert_clean_and_inert(chromium, "pytest-mllm comparison")
    assert chromium.evaluate("document.querySelectorAll('#flips .sample').length") == 2  # the two injected answers
    assert chromium.evaluate("document.querySelectorAll('figure.chart svg').length") == 1
    chromium.screenshot(tmp_path / "compare_report.png")
