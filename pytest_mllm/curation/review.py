"""The review list: samples no judge answers correctly, which are often wrongly labelled.

Each entry holds the question, the reference answer and every judge's answer. With a review
LLM (at any OpenAI-compatible chat `Endpoint`), each sample is sent with its image asking
whether the reference answer looks wrong; the verdict and the whole reply are stored. A
verdict never drops or keeps a sample: a person decides (`--keep-unanswered` keeps the whole
list in the curated benchmark).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

from pytest_mllm.curation.panel import Run
from pytest_mllm.curation.units import Item, Unit

if TYPE_CHECKING:
    from pytest_mllm.engine.endpoint import Endpoint

REVIEW_PROMPT = (
    "You are checking a benchmark for labelling mistakes. Several vision-language models all failed "
    "the question below, so its reference answer may be wrong.\n\n"
    "Question: {question}\n"
    "{options}"
    "Reference answer: {answer}\n"
    "The models answered: {answers}\n\n"
    "Looking at the image, is the reference answer right? Reply with one line "
    "'Verdict: reference right', 'Verdict: reference wrong' or 'Verdict: unsure', "
    "then one sentence saying why."
)
VERDICTS = ("reference right", "reference wrong", "unsure")
_VERDICT = re.compile(r"verdict\s*[:\-]?\s*\**\s*(reference\s+right|reference\s+wrong|unsure)", re.IGNORECASE)


def review_entries(units: Sequence[Unit], items: dict[str, Item], panel: Sequence[Run]) -> list[dict[str, Any]]:
    """One entry per sample of the given (unanswered) units, in benchmark order."""
    entries = []
    for unit in units:
        for sample_id in unit.ids:
            item = items[sample_id]
            sample = item.sample
            entries.append({
                "id": sample_id, "task": item.task, "unit": unit.key,
                "question": sample.question if sample else None,
                "choices": dict(sample.choices) if sample and sample.choices else None,
                "answer": item.answer, "image": sample.image_name if sample else None,
                "judges": [run.answer(sample_id) for run in panel],
                "llm": None,
            })
    return entries


def parse_verdict(reply: str) -> str | None:
    """"reference right", "reference wrong" or "unsure" from the reply's verdict line; None if absent."""
    match = _VERDICT.search(reply)
    return " ".join(match.group(1).lower().split()) if match else None


def review_messages(entry: dict[str, Any], image: Any | None) -> list[dict[str, Any]]:
    """The chat messages asking about one entry (the image as a PNG data URL when given)."""
    from pytest_mllm.engine.chat import image_content

    options = "".join(f"{letter}. {text}\n" for letter, text in (entry.get("choices") or {}).items())
    answers = "; ".join(f"{j['model']}: {j['response']!r}" for j in entry["judges"] if j["status"] != "missing")
    text = REVIEW_PROMPT.format(question=entry["question"], options=options, answer=entry["answer"],
                                answers=answers or "(none)")
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if image is not None:
        content.insert(0, image_content(image))
    return [{"role": "user", "content": content}]


def ask_reviewer(entries: list[dict[str, Any]], items: dict[str, Item], endpoint: Endpoint, model: str, *,
                 send_images: bool = True, max_tokens: int = 128, max_pixels: int | None = None) -> None:
    """Ask the LLM at `endpoint` about every entry; store its verdict, reply and any error under entry["llm"]."""
    from pytest_mllm.engine.images import DEFAULT_MAX_PIXELS, ImageError, load_image

    client = endpoint.client()
    conversations = []
    notes: list[str | None] = []
    for entry in entries:
        sample = items[entry["id"]].sample
        image, note = None, None
        if send_images and sample is not None and sample.images:
            try:
                image = load_image(sample.images[0], max_pixels or DEFAULT_MAX_PIXELS)
            except ImageError as exc:
                note = f"image not sent: {exc}"
        elif not send_images:
            note = "image not sent (--review-text-only)"
        conversations.append(review_messages(entry, image))
        notes.append(note)
    for entry, note, result in zip(entries, notes, client.chat_many(model, conversations, max_tokens=max_tokens)):
        if isinstance(result, Exception):
            entry["llm"] = {"model": model, "verdict": None, "reply": None,
                            "error": f"{type(result).__name__}: {result}", "note": note}
        else:
            entry["llm"] = {"model": model, "verdict": parse_verdict(result.text), "reply": result.text,
                            "error": None, "note": note}
