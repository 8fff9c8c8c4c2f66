"""Scoring one answer: the parser reads the response, then the verdict comes from the reference
answer (yes/no, a letter), word matching (open answers until a judge rules), VRPTEST's code match,
or a metric scored against references (ANLS, VQA match, relaxed accuracy, BLEU-4).
"""

from __future__ import annotations

from pytest_mllm.record import Record, status_of
from pytest_mllm.sample import Response, Sample
from pytest_mllm.scoring.parsers import SCORED_PARSERS, WORD_MATCH_PARSERS, get_parser
from pytest_mllm.scoring.prediction_cells import read_back


def score_record(record: Record, sample: Sample, response: Response, *, through_xlsx: bool = False) -> Record:
    """Parse the response and set the verdict (open answers: word matching until a judge rules).

    `through_xlsx`: the response is scored as VLMEvalKit's .xlsx prediction file hands it to its scorer
    (`prediction_cells.read_back`), unless it was read so already (`response.as_read`); the record keeps
    the response as given and shows the read one where it differs (`read_response`)."""
    text = response.text
    if through_xlsx and not response.as_read:
        text = read_back(response.text)
        record["read_response"] = text if text != response.text else None
    parsed = get_parser(record["parser"])(text, sample)
    if record["parser"] in SCORED_PARSERS:
        return _score_against_references(record, sample, response, parsed)
    if record["parser"] == "ccocr_ocr":  # CC-OCR's token F1, read as the row's split and category say
        from pytest_mllm.scoring.ccocr import row_f1

        score, correct = row_f1(text, sample.answer, sample.split, sample.category)
        record.update(response=response.text, parsed=parsed, score=score, correct=correct,
                      status=status_of(correct), latency_s=round(response.latency_s, 6))
        return record
    if record["parser"] == "mmmu":  # MMMU's own verdict: its option reading, or its open-answer matching
        from pytest_mllm.scoring.mmmu import verdict

        correct = verdict(text, sample)[1]
    elif record["parser"] == "code_bleu4":  # VRPTEST's relaxed accuracy for code answers
        from pytest_mllm.scoring.code_match import relaxed_code_match

        correct = relaxed_code_match(text, sample.answer)
    elif sample.answer_type == "open" or record["parser"] in WORD_MATCH_PARSERS:
        from pytest_mllm.scoring.word_match import WORD_MATCH, word_match

        try:  # the authors' reading unless the lenient one is named (`parser: word_match_lenient`)
            correct = word_match(text, references(sample),
                                 lenient=WORD_MATCH_PARSERS.get(record["parser"], False),
                                 stops_at=sample.metadata.get("vqaeval_stops_at"))
        except ValueError as exc:
            record.update(response=response.text, error=f"bad reference answer: {exc}")
            return record
        WORD_MATCH.put(record, correct)
    else:
        correct = parsed == record["answer"]
    record.update(response=response.text, parsed=parsed, correct=correct,
                  status=status_of(correct), latency_s=round(response.latency_s, 6))
    return record


def _score_against_references(record: Record, sample: Sample, response: Response, parsed: str) -> Record:
    """A continuous score (ANLS, relaxed accuracy, VQA match, caption BLEU-4) and the verdict its
    threshold gives; a metric that cannot run (no sacrebleu, no reference) errors this sample alone."""
    from pytest_mllm.scoring.references import score_answer

    given = sample.metadata.get("references")
    if given is not None and (not isinstance(given, (list, tuple)) or not all(isinstance(r, str) for r in given)):
        record.update(response=response.text, parsed=parsed, error="bad reference answers: metadata "
                      f"'references' must be a list of strings, not {given!r}")
        return record
    try:
        score, correct = score_answer(record["parser"], parsed, references(sample), from_list=given is not None)
    except (ImportError, ValueError) as exc:
        record.update(response=response.text, parsed=parsed, error=f"cannot score the answer: {exc}")
        return record
    record.update(response=response.text, parsed=parsed, score=score, correct=correct,
                  status=status_of(correct), latency_s=round(response.latency_s, 6))
    if record["parser"] == "caption_bleu4":  # the subtask's corpus BLEU-4 and CIDEr need the tokens
        from pytest_mllm.scoring.captions import CAPTION, bleu_counts
        from pytest_mllm.scoring.references import caption_tokens

        caption, refs = caption_tokens(parsed), [caption_tokens(r) for r in references(sample)]
        CAPTION.put(record, {"caption": caption, "references": refs, "bleu_counts": bleu_counts(caption, refs)})
    return record


def references(sample: Sample) -> list[str]:
    """Every accepted answer of an open-ended sample (an explicit empty list: none)."""
    given = sample.metadata.get("references")
    return list(given) if given is not None else [sample.answer]
