"""Judge-graded benchmarks: a grader's questions put to a judge, its replies read into grades.

    judge = LiveJudge(client, "gpt-4o-mini", identity, cache=cache)        # any OpenAI-compatible server
    judge = ReplayJudge(rows, identity)                                     # VLMEvalKit's judged file
    outcomes = judge.grade_many(MMVetGrader(), items)

For each item: the grader's rules first (MathVista's pre-extraction); else the judge is asked, at the
grader's first temperature; a reply that gives no grade (an empty one, one that does not read) is asked
again at the next temperature, as VLMEvalKit does, until the grader's attempts run out. A failed call (the
judge unreachable, an HTTP error, a body that is no completion, no answer within the timeout, after the
client's own retries) ends the item at once. A judge failure is the sample's error, never a score: an
outcome "error" naming it. `mode="compat"` scores such a sample as VLMEvalKit does instead
(`Grader.fallback`: MathVista's empty extraction, MM-Vet's 0.0, LLaVA-Bench's -1 and -1), and says so.

`runs` asks a repeatable grader's judge that many times, each run its own sequence of attempts (cached under
its run number), and combines the grades (MM-Vet: the mean, the official scorer's `num_run`); any failed run
fails the sample.

Every reply is cached (failed calls never are) under a key covering the judge's identity (model, URL,
revision, what its server says of it), the grader, the prompt's digest, the whole conversation, the
temperature, the token limit and the run.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from pytest_mllm.echo import excerpt
from pytest_mllm.judge.ensemble import ChatManyClient, ReplyCache
from pytest_mllm.judge.graded import GRADED
from pytest_mllm.judge.graders import GRADERS, Grade, GradeItem, Grader, GradingPrompt
from pytest_mllm.judge.prompts import Message
from pytest_mllm.record import Record
from pytest_mllm.sample import Sample

Source = Literal["rules", "judge", "replay", "fallback"]
REPLAYED_PROMPT = "VLMEvalKit's (the judged file's replies answered it)"
MODES = ("strict", "compat")


@dataclass(frozen=True)
class Attempt:
    """One judge call: its run and temperature, the reply (as read) or the call's error, and whether the
    reply came from the cache."""

    run: int
    temperature: float
    reply: str | None
    error: str | None = None
    cached: bool = False


@dataclass(frozen=True)
class Outcome:
    """What grading made of one item: a grade, or the judge failure that made the sample an error."""

    status: Literal["graded", "error"]
    source: Source
    grade: Grade | None = None
    attempts: tuple[Attempt, ...] = ()
    error: str | None = None


@dataclass
class _Pending:
    index: int
    attempts: list[Attempt] = field(default_factory=list)
    last: str = ""


def identity_text(identity: Mapping[str, Any]) -> str:
    """A judge's identity as one line of JSON (keys sorted): what its replies are cached under."""
    return json.dumps(dict(identity), sort_keys=True, ensure_ascii=False)


class GradingJudge(ABC):
    """The grading procedure shared by the live and the replayed judge (`grade_many`)."""

    identity: Mapping[str, Any]

    def prompt_digest(self, grader: Grader) -> str:
        """The digest of the prompt the judge was asked with."""
        return grader.prompt.digest

    def __init__(self, *, mode: str = "strict", runs: int = 1) -> None:
        if mode not in MODES:
            raise ValueError(f"judge mode {mode!r} is not one of {', '.join(MODES)}")
        if runs < 1:
            raise ValueError("the judge needs at least one run")
        self.mode, self.runs = mode, runs

    def grade_many(self, grader: Grader, items: Sequence[GradeItem], *, through_xlsx: bool = True) -> list[Outcome]:
        """One outcome per item, in order. `through_xlsx`: a reply is read as VLMEvalKit's judged .xlsx file
        hands it back (`Grader.as_read`)."""
        outcomes: list[Outcome | None] = [None] * len(items)
        asked = []
        for i, item in enumerate(items):
            grade = grader.rule(item)
            if grade is not None:
                outcomes[i] = Outcome("graded", "rules", grade)
            else:
                asked.append(i)
        runs = self.runs if grader.repeatable else 1
        per_run = [self._judge(grader, [items[i] for i in asked], run, through_xlsx) for run in range(runs)]
        for position, i in enumerate(asked):
            results = [found[position] for found in per_run]
            outcomes[i] = self._combined(grader, items[i], results)
        return [o for o in outcomes if o is not None]

    def _combined(self, grader: Grader, item: GradeItem, results: list[Outcome]) -> Outcome:
        attempts = tuple(a for result in results for a in result.attempts)
        failed = next((r for r in results if r.status == "error"), None)
        if failed is not None:
            if self.mode == "compat":
                return Outcome("graded", "fallback", grader.fallback(item), attempts,
                               f"{failed.error} (scored as VLMEvalKit scores a judge failure: --mllm-judge-mode=compat)")
            return Outcome("error", failed.source, None, attempts, failed.error)
        grades = [r.grade for r in results if r.grade is not None]
        return Outcome("graded", results[0].source, grader.combine(grades) if len(grades) > 1 else grades[0], attempts)

    @abstractmethod
    def _judge(self, grader: Grader, items: Sequence[GradeItem], run: int, through_xlsx: bool) -> list[Outcome]:
        """One run's outcome for each item the rules left to the judge, in order."""


class LiveJudge(GradingJudge):
    """A judge at an OpenAI-compatible endpoint (any served model or API), through a `chat_many` client."""

    def __init__(self, client: ChatManyClient, model: str, identity: Mapping[str, Any], *,
                 cache: ReplyCache | None = None, mode: str = "strict", runs: int = 1,
                 max_tokens: int | None = None) -> None:
        super().__init__(mode=mode, runs=runs)
        self.client, self.model, self.identity, self.cache = client, model, dict(identity), cache
        self.max_tokens = max_tokens  # a cap on each grader's own reply limit (None: the grader's)

    def _limit(self, grader: Grader) -> int:
        return grader.max_tokens if self.max_tokens is None else min(grader.max_tokens, self.max_tokens)

    def _judge(self, grader: Grader, items: Sequence[GradeItem], run: int, through_xlsx: bool) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(items)
        pending = [_Pending(i) for i in range(len(items))]
        for temperature in grader.temperatures:
            if not pending:
                break
            conversations = [grader.messages(items[p.index]) for p in pending]
            replies = self._ask(grader, conversations, temperature, run)
            still = []
            for p, (reply, cached) in zip(pending, replies):
                if isinstance(reply, Exception):
                    error = f"{type(reply).__name__}: {reply}"
                    p.attempts.append(Attempt(run, temperature, None, error))
                    outcomes[p.index] = Outcome("error", "judge", None, tuple(p.attempts),
                                                f"the judge's call failed: {error}")
                    continue
                text = grader.as_read(reply, through_xlsx) if reply.strip() else ""
                p.attempts.append(Attempt(run, temperature, text, cached=cached))
                grade = grader.read(text, items[p.index]) if text else None
                if grade is not None:
                    outcomes[p.index] = Outcome("graded", "judge", grade, tuple(p.attempts))
                else:
                    p.last = text
                    still.append(p)
            pending = still
        for p in pending:
            shown = excerpt(p.last) if p.last else "an empty reply"
            outcomes[p.index] = Outcome("error", "judge", None, tuple(p.attempts),
                                        f"no readable grade in {len(p.attempts)} replies (the last: {shown})")
        return [o for o in outcomes if o is not None]

    def _key(self, grader: Grader, messages: Sequence[Message], temperature: float, run: int) -> str:
        payload = {"kind": "grading", "grader": grader.name, "judge": identity_text(self.identity),
                   "prompt": grader.prompt.digest, "messages": list(messages), "temperature": temperature,
                   "max_tokens": self._limit(grader), "run": run}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def _ask(self, grader: Grader, conversations: list[list[Message]], temperature: float,
             run: int) -> list[tuple[str | Exception, bool]]:
        """(reply or the call's error, from the cache?) per conversation; new replies are cached."""
        keys = [self._key(grader, c, temperature, run) for c in conversations] if self.cache is not None else []
        hits = self.cache.get_many(keys) if self.cache is not None else {}
        todo = [n for n in range(len(conversations)) if not keys or keys[n] not in hits]
        fresh = self._call([conversations[n] for n in todo], temperature, self._limit(grader))
        answers: dict[int, str | Exception] = dict(zip(todo, fresh))
        if self.cache is not None:
            self.cache.put_many({keys[n]: r for n, r in answers.items() if isinstance(r, str)}, identity_text(self.identity))
        return [(answers[n], False) if n in answers else (hits[keys[n]], True) for n in range(len(conversations))]

    def _call(self, conversations: list[list[Message]], temperature: float, max_tokens: int) -> list[str | Exception]:
        if not conversations:
            return []
        try:
            results = list(self.client.chat_many(self.model, conversations, temperature=temperature,
                                                 max_tokens=max_tokens))
        except Exception as exc:  # a judge failure is never a score: every call of this batch failed
            return [exc] * len(conversations)
        if len(results) != len(conversations):
            raise RuntimeError(f"chat_many returned {len(results)} results for {len(conversations)} conversations")
        return [r if isinstance(r, Exception) else str(r.text) for r in results]


class ReplayJudge(GradingJudge):
    """The judge's replies recorded in VLMEvalKit's judged file (rows by index, `models/judge_replay.py`)."""

    def __init__(self, rows: Mapping[str, Mapping[str, Any]], identity: Mapping[str, Any], *,
                 mode: str = "strict") -> None:
        super().__init__(mode=mode)
        self.rows, self.identity = rows, dict(identity)

    def prompt_digest(self, grader: Grader) -> str:
        return REPLAYED_PROMPT

    def _judge(self, grader: Grader, items: Sequence[GradeItem], run: int, through_xlsx: bool) -> list[Outcome]:
        outcomes = []
        for item in items:
            row = self.rows.get(item.key)
            if row is None:
                outcomes.append(Outcome("error", "replay", None, (), f"the judged file {self.identity.get('file')} "
                                        f"has no row of index {item.key}"))
                continue
            reply = grader.replayed(row)
            attempt = Attempt(run, grader.temperatures[0], reply, None if reply is not None else "recorded failure")
            grade = grader.read(reply, item) if reply is not None else None
            if grade is not None:
                outcomes.append(Outcome("graded", "replay", grade, (attempt,)))
            elif reply is None:
                outcomes.append(Outcome("error", "replay", None, (attempt,),
                                        "the recorded judge gave no usable reply (VLMEvalKit's file says its judge failed)"))
            else:
                outcomes.append(Outcome("error", "replay", None, (attempt,),
                                        f"the recorded reply {excerpt(reply)} gives no grade"))
        return outcomes


def graded_part(grader: Grader, judge: GradingJudge, item: GradeItem | None, outcome: Outcome) -> dict[str, Any]:
    """A record's `graded` part: the grader, who graded (the judge's identity and the prompt's digest), how,
    the grader's values, every call, the breakdowns the sample counts in, and the error if any."""
    grade = outcome.grade
    return {
        "grader": grader.name,
        "judge": {**judge.identity, "prompt": judge.prompt_digest(grader)},
        "source": outcome.source,
        "status": outcome.status,
        "values": dict(grade.values) if grade else {},
        "attempts": [{"run": a.run, "temperature": a.temperature, "reply": a.reply, "error": a.error,
                      "cached": a.cached} for a in outcome.attempts],
        "breakdowns": {kind: list(names) for kind, names in (item.breakdowns if item else {}).items()},
        "shared": dict(item.shared) if item else {},
        "error": outcome.error,
    }


def grade_records(judge: GradingJudge, grader: Grader, pairs: Sequence[tuple[Record, Sample]], *,
                  through_xlsx: bool = True) -> None:
    """Grade the records of one grader in place: each gets its `graded` part and its verdict, or the judge
    failure (or the row's unreadable cell) as its error."""
    items: list[GradeItem | None] = []
    for record, sample in pairs:
        try:
            items.append(grader.item(record, sample))
        except ValueError as exc:
            record.update({"status": "error", "correct": None, "error": f"cannot grade this row: {exc}"})
            items.append(None)
    ready = [(n, item) for n, item in enumerate(items) if item is not None]
    outcomes = judge.grade_many(grader, [item for _, item in ready], through_xlsx=through_xlsx)
    for (n, item), outcome in zip(ready, outcomes):
        record = pairs[n][0]
        GRADED.put(record, graded_part(grader, judge, item, outcome))
        if outcome.status == "error":
            record.update({"status": "error", "correct": None, "error": f"judge error: {outcome.error}"})
            continue
        grade = outcome.grade
        assert grade is not None
        record.update({"correct": grade.correct, "status": "correct" if grade.correct else "incorrect", "error": None,
                       "parsed": grade.shown, "score": grade.score})


def served_identity(model: str, url: str, revision: str | None, server_info: Mapping[str, Any] | None) -> dict[str, Any]:
    """Who a served judge is: its model, URL, the revision the user states, and a digest of what its server's
    `GET /models` says of it (None when it says nothing)."""
    server = hashlib.sha256(json.dumps(server_info, sort_keys=True).encode()).hexdigest()[:16] if server_info else None
    return {"kind": "served", "model": model, "url": url, "revision": revision, "server": server}


class Grading:
    """A run's judge-graded scoring: one judge, and each benchmark's grader (with a user's prompt where given)."""

    def __init__(self, judge: GradingJudge, prompts: Mapping[str, GradingPrompt] | None = None) -> None:
        self.judge = judge
        self.prompts = dict(prompts or {})
        self._graders: dict[str, Grader] = {}

    def grader(self, name: str) -> Grader:
        """The grader registered for a judge-graded parser's name (`graders.GRADERS`)."""
        if name not in self._graders:
            self._graders[name] = GRADERS.get(name)(self.prompts.get(name))
        return self._graders[name]

    def __call__(self, pairs: Sequence[tuple[Record, Sample, bool]]) -> None:
        """Grade (record, sample, read through VLMEvalKit's .xlsx?) triples in place, a batch per grader."""
        groups: dict[tuple[str, bool], list[tuple[Record, Sample]]] = {}
        for record, sample, through_xlsx in pairs:
            groups.setdefault((record["parser"], through_xlsx), []).append((record, sample))
        for (name, through_xlsx), group in groups.items():
            grade_records(self.judge, self.grader(name), group, through_xlsx=through_xlsx)
