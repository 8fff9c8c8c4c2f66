"""The plain, typed hand-offs between stages: Sample, ImageRef, Request, Response.

A benchmark loader yields `Sample`s; the evaluator turns each into a `Request` (rendered
prompt + decoded images) for a model, which returns a `Response`; the sample's outcome is a
`Record` (record.py), which metrics and reports aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    from PIL import Image

AnswerType = Literal["yes_no", "choice", "open"]


@dataclass(frozen=True)
class ImageRef:
    """Where a sample's image comes from; decoded only when a model needs it.

    kind: "path" (value is a path relative to `root`), "base64" (value is the encoded
    bytes), "generated" (value is a key; `generator` draws the image), "parquet" (one cell
    of a parquet file: value is "<file relative to root>#<row>/<column>[<item>]", unique per
    image; `cell` is (row group, row in that group, column, item in a list cell or -1)), or "tsv"
    (base64 text inside a TSV: value is "<file relative to root>#<line>[<item>]", unique per image;
    `cell` is (byte offset, byte length, column, item in a list cell or -1)).
    """

    kind: Literal["path", "base64", "generated", "parquet", "tsv"]
    value: str
    root: Path | None = None
    generator: Callable[[str], "Image.Image"] | None = field(default=None, compare=False)
    label: str | None = None  # a file-like name for images that have no file
    cell: tuple[int, int, str, int] | None = None  # kinds "parquet", "tsv": where the image's cell lies

    @property
    def name(self) -> str:
        """A short human name: the label, the file name, or the generator key."""
        if self.label:
            return self.label
        if self.kind == "path":
            return Path(self.value).name
        return self.value if self.kind == "generated" else "<base64>"


@dataclass(frozen=True)
class Sample:
    """One benchmark question: the unit that becomes one test."""

    id: str  # stable, unique within the benchmark, e.g. "existence::000000006040.jpg::q2"
    benchmark: str
    task: str
    question: str
    answer: str
    answer_type: AnswerType = "yes_no"
    images: tuple[ImageRef, ...] = ()
    choices: tuple[tuple[str, str], ...] = ()  # (letter, text) pairs for multiple choice
    pair_group: str | None = None  # samples sharing it are scored together by accuracy+
    split: str = "test"
    target_region: tuple[float, float, float, float] | None = None  # x0, y0, x1, y1 in pixels
    category: str | None = None
    l2_category: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def image_name(self) -> str:
        """The first image's short name ("" when the sample has no image)."""
        return self.images[0].name if self.images else ""


@dataclass(frozen=True)
class BadSample:
    """A sample that could not be read; it becomes a test that errors with `error`."""

    id: str
    benchmark: str
    task: str
    error: str
    pair_group: str | None = None  # its pair (MME's two questions of an image): left out of accuracy+ with it


@dataclass(frozen=True)
class SkippedSample:
    """A sample that does not apply to this run (e.g. no target region in a VRP run)."""

    id: str
    benchmark: str
    task: str
    reason: str


@dataclass
class Request:
    """What a model is asked: the sample, its rendered prompt, its decoded images."""

    sample: Sample
    prompt: str
    images: "list[Image.Image]"
    max_new_tokens: int = 32


@dataclass
class Response:
    """A model's answer to one request."""

    text: str
    latency_s: float = 0.0
    error: str | None = None  # set when this one request failed; its sample errors alone
    as_read: bool = False  # the text is already what the reference's scorer received (a replayed prediction file)


@runtime_checkable
class Model(Protocol):
    """Anything that answers a batch of requests, one response per request, in order.

    A model may also say `reads_images = True`: it never changes the images of its requests, so the
    samples that share an image may be handed one decoded image."""

    name: str
    needs_images: bool

    def generate(self, requests: Sequence[Request]) -> list[Response]: ...
