"""No API key leaves for the wrong server, and none comes back into anything a run writes.

A fault injector on loopback echoes the canary key it is sent (whole, cut, split; in error bodies,
in successful replies, in a response header); a full plugin run against it must leave no fragment
of the key of 6+ characters in the terminal, the JSON and HTML reports, the junit XML, the response
cache or the log file. A key variable that is named but unset stops the run before any request.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from pytest_mllm.curation.cli import main as curate_main

MIN_FRAGMENT = 6
CANARY = "sk-Q7f3Zp9LmX2vT8kR4wN6yB1cH5jD0gSeW2vq"  # never a real key (and no word of 6+ letters in it)
OTHER = "sk-Zx81Qw02Lk93Mn47Pb56Vc11Ty"  # $OPENAI_API_KEY while a variable is named
SUBSET = ("-k", "existence and (img_000 or img_001 or img_002 or img_003 or img_004 or img_005)")  # 12 samples


def fragment_count(text: str, key: str = CANARY) -> int:
    """How many places in `text` hold a piece of `key` of MIN_FRAGMENT+ characters (overlapping pieces once)."""
    grams = {key[i:i + MIN_FRAGMENT] for i in range(len(key) - MIN_FRAGMENT + 1)}
    hits = sorted(at for gram in grams for at in _find_all(text, gram))
    places, end = 0, -1
    for at in hits:
        if at > end:
            places += 1
        end = max(end, at + MIN_FRAGMENT - 1)
    return places


def _find_all(text: str, gram: str) -> Iterator[int]:
    at = text.find(gram)
    while at != -1:
        yield at
        at = text.find(gram, at + 1)


class EchoingServer:
    """An OpenAI-compatible endpoint that echoes the Authorization header's key back in many shapes."""

    def __init__(self) -> None:
        self.auth: list[str | None] = []
        self.sent = ""  # every reply body it sent, to show the echo was there to leak
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                auth = self.headers.get("Authorization")
                with server._lock:
                    n = len(server.auth)
                    server.auth.append(auth)
                key = (auth or "").removeprefix("Bearer ")
                status, body = server.reply(n, key, auth or "")
                with server._lock:
                    server.sent += body
                payload = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if body.startswith("{") else "text/html")
                self.send_header("X-Echo-Key", key)  # logged by the SDK at DEBUG with the response headers
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @staticmethod
    def reply(n: int, key: str, auth: str) -> tuple[int, str]:
        def ok(text: str) -> tuple[int, str]:
            return 200, json.dumps({"choices": [{"message": {"role": "assistant", "content": text},
                                                 "finish_reason": "stop"}]})
        shapes = [
            lambda: ok(f"Yes. By the way, your key is {key}."),
            lambda: ok(f"No {key[:11]}"),  # cut
            lambda: ok(f"yes {key[:17]} … {key[17:]}"),  # split
            lambda: ok(f"<b>{key[6:30]}</b> no"),
            lambda: (400, json.dumps({"error": {"message": "x" * 285 + f" invalid key {key}"}})),  # at the cut
            lambda: (500, f"<html><body><h1>Internal error</h1><pre>Authorization: {auth}</pre></body></html>"),
            lambda: (401, json.dumps({"error": f"api key {key[:14]}… rejected; expected {key[14:]}"})),
            lambda: (200, f"not json at all {key}"),
            lambda: (200, json.dumps({"echo": key, "choices": []})),
            lambda: ok(f"{key[-12:]} yes"),
        ]
        return shapes[n % len(shapes)]()

    def __enter__(self) -> "EchoingServer":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def server() -> Iterator[EchoingServer]:
    with EchoingServer() as running:
        yield running


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CANARY_UNSET", raising=False)
    monkeypatch.setenv("CANARY_KEY", CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", OTHER)


def test_a_canary_key_echoed_back_leaves_no_fragment_in_any_artefact(pytester: pytest.Pytester,
                                                                     server: EchoingServer) -> None:
    out, html, junit, log = (pytester.path / name for name in ("out.json", "report.html", "junit.xml", "run.log"))
    cache_dir = pytester.path / "cache"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--mllm=openai:echo-vlm", f"--mllm-base-url={server.base_url}",
        "--mllm-api-key-env=CANARY_KEY", "--mllm-max-retries=0", "--mllm-batch-size=4", "--mllm-bench=shapes",
        *SUBSET, f"--mllm-json={out}", f"--mllm-html={html}", f"--junitxml={junit}", f"--mllm-cache-dir={cache_dir}",
        "-rA", "-v", "--log-level=DEBUG", f"--log-file={log}", "--log-file-level=DEBUG")
    terminal = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, terminal  # the error replies error their samples

    # The key went out, only as the header, to the server it was meant for; the other key never did.
    assert len(server.auth) == 12 and set(server.auth) == {f"Bearer {CANARY}"}
    assert fragment_count(server.sent) >= 10  # the server did echo it back, in every shape
    records = json.loads(out.read_text())["records"]
    assert "error" in {r["status"] for r in records}
    assert any("***" in (r["response"] or "") for r in records) and any("***" in (r["error"] or "") for r in records)

    cache_files = sorted(cache_dir.rglob("*"))
    assert any(p.name == "responses.sqlite3" for p in cache_files)
    artefacts = {
        "terminal (-rA -v)": terminal,
        "--mllm-json": out.read_text(),
        "--mllm-html": html.read_text(),
        "--junitxml": junit.read_text(),
        "response cache": "".join(p.read_bytes().decode("latin-1") for p in cache_files if p.is_file()),
        "log file (DEBUG)": log.read_text(),
        "every file the run wrote": "".join(p.read_bytes().decode("latin-1") for p in pytester.path.rglob("*")
                                            if p.is_file()),
    }
    counts = {name: fragment_count(text) for name, text in artefacts.items()}
    print("canary key fragments (6+ characters) per artefact:",
          ", ".join(f"{name}: {count}" for name, count in counts.items()))
    assert any(said in artefacts["log file (DEBUG)"] for said in ("Retrying", "HTTP Request:", "HTTP Response"))
    assert counts == {name: 0 for name in artefacts}
    assert fragment_count(terminal, OTHER) == 0


@pytest.mark.parametrize("args", [
    ["--mllm=openai:vlm", "--mllm-api-key-env=CANARY_UNSET"],
    ["--mllm=baseline:yes", "--mllm-judge=openai:judge", "--mllm-judge-api-key-env=CANARY_UNSET"],
    ["--mllm=baseline:yes", "--mllm-optimize=prompts.yaml", "--mllm-optimizer=openai:opt",
     "--mllm-optimizer-api-key-env=CANARY_UNSET"],
], ids=["model", "judge", "optimizer"])
def test_a_named_key_variable_that_is_unset_is_a_usage_error(pytester: pytest.Pytester, server: EchoingServer,
                                                             args: list[str]) -> None:
    option = args[-1].split("=")[0]
    url_option = option.replace("api-key-env", "base-url")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=shapes", *args,
                                           f"{url_option}={server.base_url}")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert f"{option}=CANARY_UNSET" in output and "CANARY_UNSET is not set" in output, output
    assert server.auth == [] and fragment_count(output, OTHER) == 0


def test_the_reviewer_key_variable_named_but_unset_stops_curation(tmp_path: Path, server: EchoingServer,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = curate_main(["shapes", "--panel", "baseline:yes", "--panel", "baseline:no", "--out", str(tmp_path / "out"),
                        "--review-llm", "openai:rev", "--review-base-url", server.base_url,
                        "--review-api-key-env", "CANARY_UNSET"])
    err = capsys.readouterr().err
    assert code == 2 and "--review-api-key-env CANARY_UNSET" in err and "is not set" in err, err
    assert server.auth == [] and not (tmp_path / "out").exists()


def test_without_a_named_variable_openai_api_key_goes_to_the_url_given(pytester: pytest.Pytester,
                                                                        server: EchoingServer) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=openai:vlm", "--mllm-bench=shapes",
                                           "-k", "existence and img_000 and q1", f"--mllm-base-url={server.base_url}",
                                           "--mllm-cache=off")
    assert server.auth == [f"Bearer {OTHER}"], result.stdout.str()
    assert fragment_count(result.stdout.str(), OTHER) == 0
