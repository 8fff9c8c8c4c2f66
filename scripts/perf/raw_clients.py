"""The raw clients the served run is compared with: the `openai` SDK driven by a plain loop, with no
plugin and no pytest, sending the requests the plugin sends (the same bytes: the server compares
their digests).

Each reads the benchmark's JSONL, fills the prompt template, encodes each distinct image once
(Pillow: decoded, converted to RGB, saved as PNG, base64 in a data URL: as the plugin encodes it),
sends one chat completion per sample at temperature 0 with the spec's token limit, `concurrency`
at a time, and writes {sample id: answer text} as JSON (ids as the plugin's records give them: task::id).

  async    `openai.AsyncOpenAI`, `concurrency` coroutines taking samples from one iterator;
  threads  `openai.OpenAI` shared by `concurrency` threads (a `ThreadPoolExecutor` over the samples).
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

RAW_KINDS = ("async", "threads")


def _samples(workload: dict[str, Any]) -> list[dict[str, Any]]:
    root = Path(workload["root"])
    with (root / workload["samples"]).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _messages_maker(workload: dict[str, Any]) -> Any:
    from PIL import Image

    root = Path(workload["root"])
    template: str = workload["prompt"]
    urls: dict[str, str] = {}

    def image_url(relative: str) -> str:
        url = urls.get(relative)
        if url is None:
            with Image.open(root / relative) as image:
                image.load()
                rgb = image.convert("RGB")
            buffer = io.BytesIO()
            rgb.save(buffer, format="PNG")
            url = urls[relative] = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        return url

    def messages(sample: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_url(sample["image"])}},
                                             {"type": "text", "text": template.format(question=sample["question"])}]}]

    return messages


def raw_worker(kind: str, workload_file: Path, base_url: str, concurrency: int, answers_file: Path) -> int:
    """The `_raw` mode: one raw client's run over the workload; the answers go to `answers_file`."""
    workload = json.loads(workload_file.read_text(encoding="utf-8"))
    samples = _samples(workload)
    messages = _messages_maker(workload)
    model, max_tokens = workload["model"], workload["max_tokens"]
    answers: dict[str, str] = {}
    if kind == "async":
        import asyncio

        import openai

        async def main() -> None:
            client = openai.AsyncOpenAI(base_url=base_url, api_key="none")
            pending = iter(samples)

            async def worker() -> None:
                for sample in pending:
                    completion = await client.chat.completions.create(
                        model=model, messages=messages(sample), temperature=0.0, max_tokens=max_tokens)
                    answers[f"{sample['task']}::{sample['id']}"] = (completion.choices[0].message.content or "").strip()

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            await client.close()

        asyncio.run(main())
    elif kind == "threads":
        from concurrent.futures import ThreadPoolExecutor

        import openai

        client = openai.OpenAI(base_url=base_url, api_key="none")

        def one(sample: dict[str, Any]) -> None:
            completion = client.chat.completions.create(
                model=model, messages=messages(sample), temperature=0.0, max_tokens=max_tokens)
            answers[f"{sample['task']}::{sample['id']}"] = (completion.choices[0].message.content or "").strip()

        with ThreadPoolExecutor(concurrency) as pool:
            for _ in pool.map(one, samples):
                pass
        client.close()
    else:
        raise SystemExit(f"unknown raw client {kind!r}: one of {', '.join(RAW_KINDS)}")
    answers_file.write_text(json.dumps(answers), encoding="utf-8")
    return 0
