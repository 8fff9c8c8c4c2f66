"""`OpenAIModel`: a model behind an OpenAI-compatible chat-completions endpoint (`--mllm=openai:<model>`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

from pytest_mllm.engine.chat import ChatResult, Message
from pytest_mllm.engine.encoded_images import EncodedImages
from pytest_mllm.engine.endpoint import Endpoint
from pytest_mllm.sample import Request, Response


class OpenAIModel:
    """Answers each request with one chat completion: a user message of its images, then its prompt.

    Requests are sent concurrently (greedy: temperature 0). A request whose call failed gets
    a Response carrying the error, so its sample errors alone and the others keep their answers.
    With several replicas (`Endpoint.replicas`) requests spread over them and fail over between
    them (`chat.ReplicaClient`); answers are keyed by the first URL, whichever replica gave them.
    """

    needs_images = True
    reads_images = True  # never changes them: samples sharing an image may share its decoding

    def __init__(self, model: str, endpoint: Endpoint) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.revision = endpoint.model_revision
        self.client = endpoint.replica_client()
        self.client.check_reachable()
        self.server_info = self.client.model_info(model)  # what the server says of it (None: nothing)
        self.images = EncodedImages()  # each image encoded once, whichever samples show it

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.client.base_url!r})"

    @property
    def identity(self) -> str:
        """What cached answers are keyed by: the model name at its endpoint (the first URL of several
        replicas), the revision the user states (--mllm-model-revision) and a digest of what the
        server's `GET /models` says of the model (its stable fields)."""
        return served_identity(self.name, self.client.base_url, self.revision, self.server_info)

    def messages(self, request: Request) -> list[Message]:
        """The chat messages sent for `request`."""
        content = [self.images.content(image) for image in request.images]
        content.append({"type": "text", "text": request.prompt})
        return [{"role": "user", "content": content}]

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request, in order; requests with the same token limit go out together."""
        results: list[ChatResult | Exception | None] = [None] * len(requests)
        if len(requests) == 1:  # a served run's pipeline asks one at a time: no gather of one
            try:
                results[0] = self.client.chat(self.model, self.messages(requests[0]), temperature=0.0,
                                              max_tokens=requests[0].max_new_tokens)
            except Exception as exc:  # noqa: BLE001 - this request's error, as chat_many returns it
                results[0] = exc
        for max_tokens in sorted({r.max_new_tokens for r in requests} if len(requests) > 1 else ()):
            indices = [i for i, r in enumerate(requests) if r.max_new_tokens == max_tokens]
            answers = self.client.chat_many(self.model, [self.messages(requests[i]) for i in indices],
                                            temperature=0.0, max_tokens=max_tokens)
            for i, answer in zip(indices, answers):
                results[i] = answer
        return [Response(text=r.text.strip(), latency_s=r.latency_s) if isinstance(r, ChatResult)
                else Response(text="", error=f"{type(r).__name__}: {r}") for r in results]


def served_identity(name: str, base_url: str, revision: str | None, server_info: dict[str, Any] | None) -> str:
    """`openai:<model>@<url>[#revision=<text>][#server=<digest of the server's model entry>]`."""
    identity = f"{name}@{base_url}"
    if revision:
        identity += f"#revision={revision}"
    if server_info is not None:
        digest = hashlib.sha256(json.dumps(server_info, sort_keys=True).encode()).hexdigest()[:16]
        identity += f"#server={digest}"
    return identity
