"""User models: from a conftest hook and from the `pytest_mllm.models` entry point group."""

from __future__ import annotations

import json
import textwrap

import pytest

MODEL_MODULE = """
    from pytest_mllm.sample import Response

    class ColourCounter:
        '''Answers "Yes" when the asked colour word names the image's most common non-white colour.'''
        needs_images = True

        def __init__(self, name="colour-counter"):
            self.name = name

        def generate(self, requests):
            out = []
            for request in requests:
                image = request.images[0].convert("RGB")
                colours = [c for n, c in sorted(image.getcolors(1 << 16), reverse=True) if c != (255, 255, 255)]
                r, g, b = colours[0][:3] if colours else (0, 0, 0)
                named = {"red": (r > 150 and g < 100 and b < 100), "green": (g > 100 and r < 100 and b < 100),
                         "blue": (b > 150 and r < 100 and g < 100)}
                asked = [w for w in named if w in request.prompt]
                out.append(Response("Yes" if asked and named[asked[-1]] else "No"))
            return out
"""


def test_model_from_conftest_hook(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_models=MODEL_MODULE)
    pytester.makeconftest("""
        from my_models import ColourCounter

        def pytest_mllm_make_model(spec, config):
            if spec == "colour-counter":
                return ColourCounter()
    """)
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=colour-counter", "--mllm-bench=shapes",
                                "-k", "color", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK
    data = json.loads(out.read_text())
    assert data["settings"]["model"] == "colour-counter"
    # a real (if simple) model: it reads the pixels, so it beats chance on the colour task
    assert data["benchmarks"]["shapes"]["metrics"]["color.accuracy"] > 0.6


def test_model_from_an_entry_point(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(my_models=MODEL_MODULE)
    dist = pytester.path / "my_models-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-models\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""
        [pytest_mllm.models]
        counter = my_models:ColourCounter
    """))
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=counter:v2", "--mllm-bench=shapes",
                                           "-k", "color and img_00", "-v")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*color::img_000.png::q1 PASSED*"])
