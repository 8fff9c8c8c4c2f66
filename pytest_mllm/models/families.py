"""How each model family is prompted: its conventions as data, keyed by the `model_type` of the
checkpoint's config.json. `models/hf_inputs.py` applies them; nothing else branches on a family.

Defaults follow each family's documented transformers usage (its model card and the
transformers docs): the checkpoint's own chat template, its own system turn (none added here),
its own image budget (the processor settings saved with the checkpoint), images before the
question in one user turn. A family without a chat template (PaliGemma) is prompted with a task
prefix instead. Settings a user passes to the processor (e.g. Qwen's `max_pixels`) override the
saved ones; see docs/reference.md, "Your model".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Conventions:
    """How a family's prompt and images are put together, and what generation stops at."""

    chat_template: bool = True  # rendered with the processor's chat template; else `prompt_format`
    # the text of the user's turn, or without a chat template the text the processor is given: "{prompt}" the
    # benchmark's prompt and "{images}" `image_placeholder` once per image; None: no text at all (an unconditional
    # captioner); a format without "{prompt}" is a documented task prompt that replaces every question
    # (`question` says why)
    prompt_format: str | None = "{prompt}"
    image_placeholder: str = ""
    interleaved: bool = False  # the processor takes each prompt as a list of text pieces and images (IDEFICS)
    max_images: int | None = None  # the images one prompt can carry (None: any number); one: passed unnested
    one_at_a_time: bool = False  # prompts are not batched: padding them would change the answers
    stop_tokens: tuple[str, ...] = ()  # generation also stops at these, as the model card's `generate` call does
    banned_tokens: tuple[str, ...] = ()  # never generated (the model card's `bad_words_ids`)
    system_prompt: str | None = None  # a system turn of our own (None: the template's default, if any)
    images_before_text: bool = True  # where the images go in the user turn
    processor_kwargs: dict[str, Any] = field(default_factory=dict)  # over the checkpoint's saved settings
    call_kwargs: dict[str, Any] = field(default_factory=dict)  # given to every processor call
    dropped_inputs: tuple[str, ...] = ()  # processor outputs the model card drops before `generate`
    refused: str | None = None  # why the family cannot be run on a benchmark (the run stops before any sample)
    source: str = "the checkpoint's chat template (transformers' documented usage)"
    question: str = "asked as written"  # what a benchmark's question becomes, for the reference's family table

    def fingerprint(self) -> str:
        """A short hash of the settings here that change answers and differ from the default's (so a setting
        added later leaves every fingerprint as it was)."""
        default = {f.name: getattr(DEFAULT, f.name) for f in fields(self)}
        settings = {k: v for k, v in asdict(self).items()
                    if k not in ("source", "question") and _comparable(v) != _comparable(default[k])}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def _comparable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


DEFAULT = Conventions()

_TEMPLATE = "its chat template"
FAMILIES: dict[str, Conventions] = {
    # google/paligemma-3b-mix-224 has no chat template: its model card prompts the mix checkpoints with a
    # task prefix ("caption en", "answer en <question>"); the processor adds the image tokens and BOS.
    "paligemma": Conventions(chat_template=False, prompt_format="answer en {prompt}",
                             source="google/paligemma-3b-mix-224's model card: the `answer en ` task prefix"),
    # Qwen2-VL, Qwen2.5-VL, Qwen3-VL: the image budget is the checkpoint's preprocessor_config.json (for
    # Qwen2/2.5-VL min_pixels 3136 = 4 x 28 x 28, max_pixels 12845056 = 16384 x 28 x 28), what the model cards'
    # `AutoProcessor.from_pretrained(...)` uses; pass `max_pixels` to the processor to change it.
    "qwen2_vl": Conventions(source="Qwen/Qwen2-VL-7B-Instruct: " + _TEMPLATE + " (its default system turn "
                                   "'You are a helpful assistant.'), its preprocessor_config.json image budget"),
    "qwen2_5_vl": Conventions(source="Qwen/Qwen2.5-VL-7B-Instruct: " + _TEMPLATE + " (its default system turn), "
                                     "its preprocessor_config.json image budget"),
    "qwen3_vl": Conventions(source="Qwen/Qwen3-VL-8B-Instruct: " + _TEMPLATE + ", its image budget"),
    "llava": Conventions(source="llava-hf/llava-1.5-7b-hf: " + _TEMPLATE),
    "llava_next": Conventions(source="llava-hf/llava-v1.6-mistral-7b-hf: " + _TEMPLATE + ", its grid pinpoints"),
    "llava_onevision": Conventions(source="llava-hf/llava-onevision-qwen2-7b-ov-hf: " + _TEMPLATE),
    "idefics2": Conventions(source="HuggingFaceM4/idefics2-8b: " + _TEMPLATE + ", its image splitting setting"),
    "idefics3": Conventions(source="HuggingFaceM4/Idefics3-8B-Llama3, HuggingFaceTB/SmolVLM-Instruct: "
                                   + _TEMPLATE + " (it writes the BOS itself)"),
    "smolvlm": Conventions(source="HuggingFaceTB/SmolVLM2-2.2B-Instruct: " + _TEMPLATE + " (it writes the BOS)"),
    "gemma3": Conventions(source="google/gemma-3-4b-it: " + _TEMPLATE + " (it writes the BOS; a system turn "
                                 "opens the first user turn)"),
    "internvl": Conventions(source="OpenGVLab/InternVL3-1B-hf: " + _TEMPLATE),
    "mllama": Conventions(source="meta-llama/Llama-3.2-11B-Vision-Instruct: " + _TEMPLATE + " (it writes the BOS)"),
    # -- no chat template: the model card's text ----------------------------------------------------------------
    "blip": Conventions(chat_template=False, prompt_format=None, max_images=1,
                        source="Salesforce/blip-image-captioning-base's model card: unconditional captioning, "
                               "`processor(image)`",
                        question="not given: an image captioner answers every sample with a caption of its image "
                                 "(meaningful for caption benchmarks only)"),
    "blip-2": Conventions(chat_template=False, prompt_format="Question: {prompt} Answer:", max_images=1,
                          source="Salesforce/blip2-opt-2.7b's model card: `Question: … Answer:`"),
    # its processor pads the Q-Former's text on the language model's side: left padding would shift the Q-Former's
    # absolute positions, so its prompts are answered one at a time
    "instructblip": Conventions(chat_template=False, max_images=1, one_at_a_time=True,
                                source="Salesforce/instructblip-vicuna-7b's model card: the instruction as the text"),
    "git": Conventions(chat_template=False, prompt_format="[CLS]{prompt}", call_kwargs={"add_special_tokens": False},
                       max_images=1,
                       source="transformers' GIT docs (its visual question answering example): [CLS] and the question's tokens, "
                              "no [SEP]"),
    # its processor puts the image tokens at a fixed place in each row, right after the BOS: a left-padded batch
    # would move them, so its prompts are answered one at a time
    "kosmos-2": Conventions(chat_template=False, prompt_format="<grounding> Question: {prompt} Answer:", max_images=1,
                            one_at_a_time=True, source="microsoft/kosmos-2-patch14-224's model card: its grounded question answering "
                                   "prompt"),
    "florence2": Conventions(chat_template=False, prompt_format="<CAPTION>", max_images=1,
                             source="microsoft/Florence-2-base's model card: the `<CAPTION>` task token",
                             question="replaced by the `<CAPTION>` task: Florence-2 takes task tokens, not questions "
                                      "(meaningful for caption benchmarks only)"),
    "chameleon": Conventions(chat_template=False, prompt_format="{prompt}{images}", image_placeholder="<image>",
                             source="facebook/chameleon-7b's model card: the question, then `<image>` per image"),
    "idefics": Conventions(chat_template=False, interleaved=True,
                           prompt_format="User:{images}{prompt}<end_of_utterance>\nAssistant:",
                           stop_tokens=("<end_of_utterance>",), banned_tokens=("<image>", "<fake_token_around_image>"),
                           source="HuggingFaceM4/idefics-9b-instruct's model card: `User:`, the image, the question "
                                  "and `<end_of_utterance>`, `\nAssistant:`; generation stops at `<end_of_utterance>` "
                                  "and never writes image tokens"),
    "got_ocr2": Conventions(chat_template=False, prompt_format=None, max_images=1, stop_tokens=("<|im_end|>",),
                            source="transformers' GOT-OCR 2.0 docs: `processor(image)` (its own plain-OCR prompt), "
                                   "generation stopping at `<|im_end|>`",
                            question="not given: GOT-OCR 2.0 reads out the text of the image for every sample "
                                     "(meaningful for OCR benchmarks only)"),
    # its image processor pads a batch's images to the largest, and the VQ codes of an image see its padding: its
    # prompts are answered one at a time
    "emu3": Conventions(chat_template=False, one_at_a_time=True,
                        prompt_format="You are a helpful assistant. USER: {images}{prompt} ASSISTANT:",
                        image_placeholder="<image>",
                        source="transformers' Emu3 docs (Emu3-community/Emu3-Chat-hf): `You are a helpful assistant. "
                               "USER: <image>… ASSISTANT:`"),
    "fuyu": Conventions(chat_template=False, prompt_format="{prompt}\n", max_images=1,
                        source="adept/fuyu-8b's model card: the question and a newline"),
    # -- refused: no benchmark question can be asked of them --------------------------------------------------------
    "evolla": Conventions(refused="Evolla answers questions about protein sequences (its processor takes proteins and "
                                  "text), not images", source="transformers' Evolla docs"),
    "pi0": Conventions(refused="PI0 is a robot policy: from images and a robot state it predicts actions, not text",
                       source="transformers' PI0 docs"),
    "diffusion_gemma": Conventions(refused="DiffusionGemma writes text by block diffusion (unmasking blocks over "
                                           "several steps), not by the left-to-right greedy `generate` the benchmarks' "
                                           "answers are defined by", source="transformers' DiffusionGemma docs"),
    "shieldgemma2": Conventions(refused="ShieldGemma 2 is an image safety classifier: it scores an image against "
                                        "safety policies (the probability of Yes per policy, one prompt per policy), "
                                        "it does not answer questions", source="google/shieldgemma-2-4b-it's model card"),
    "mistral4": Conventions(refused="transformers 5.24's Mistral4ForCausalLM has no vision tower (text only)",
                            source="transformers' Mistral 4 code"),
    "udop": Conventions(refused="UDOP reads a document through its OCR words and their boxes (LayoutLMv3's processor, "
                                "whose OCR runs Tesseract); a benchmark gives an image and a question",
                        source="transformers' UDOP docs"),
    "instructblipvideo": Conventions(refused="InstructBLIP-Video's processor takes videos only (its image processor "
                                             "is a video processor)", source="transformers' InstructBLIP-Video docs"),
    "vision-encoder-decoder": Conventions(refused="a composite of any vision encoder and text decoder whose prompting "
                                                  "depends on the checkpoint (TrOCR takes none, Donut a task prompt); "
                                                  "no one convention fits", source="transformers' VisionEncoderDecoder "
                                                                                   "docs"),
    "kosmos-2.5": Conventions(chat_template=False, prompt_format="<ocr>", max_images=1, one_at_a_time=True,
                              dropped_inputs=("height", "width"),
                              source="transformers' Kosmos-2.5 docs (microsoft/kosmos-2.5): the `<ocr>` task prompt, "
                                     "the processor's `height` and `width` dropped before `generate`",
                              question="replaced by the `<ocr>` task: Kosmos-2.5 reads out the text of the image for "
                                       "every sample (meaningful for OCR benchmarks only)"),
    "pp_formulanet": Conventions(chat_template=False, prompt_format=None, max_images=1,
                                 source="transformers' PP-FormulaNet docs: `processor(images=image)`",
                                 question="not given: PP-FormulaNet writes the formula of the image in LaTeX for every "
                                          "sample (meaningful for formula recognition only)"),
    "pp_chart2table": Conventions(prompt_format="Chart to table",
                                  source="PaddlePaddle/PP-Chart2Table_safetensors: its chat template with the "
                                         "`Chart to table` task",
                                  question="replaced by `Chart to table`: PP-Chart2Table turns a chart into a table "
                                           "for every sample (meaningful for chart-to-table benchmarks only)"),
    # its model computes M-RoPE from mm_token_type_ids, which its processor returns only when asked
    "cosmos3_edge": Conventions(call_kwargs={"return_mm_token_type_ids": True},
                                source="transformers' Cosmos3-Edge code: " + _TEMPLATE + ", asking the processor for the "
                                       "mm_token_type_ids its model requires"),
}


# the checkpoint transformers 5.24's docs name for each family prompted by default (its chat template): the
# source of those conventions
DOCUMENTED_CHECKPOINTS: dict[str, str] = {
    "apertus1p5": "swiss-ai/Apertus-v1.5-8B",
    "aria": "rhymes-ai/Aria",
    "aya_vision": "CohereForAI/aya-vision-8b",
    "cohere2_vision": "CohereLabs/command-a-vision-07-2025",
    "cohere_compass": "CohereLabs/North-Micro-Vision-Instruct",
    "cosmos3_omni": "nvidia/Cosmos3-Nano",
    "deepseek_ocr2": "deepseek-community/DeepSeek-OCR-2",
    "deepseek_vl": "deepseek-community/deepseek-vl-1.3b-chat",
    "deepseek_vl_hybrid": "deepseek-community/deepseek-vl-7b-chat",
    "dots3_note": "dots-studio/dots3-note-prev",
    "ernie4_5_vl_moe": "baidu/ERNIE-4.5-VL-28B-A3B-PT",
    "exaone4_5": "LGAI-EXAONE/EXAONE-4.5-33B",
    "fast_vlm": "KamilaMila/FastVLM-7B",
    "gemma3n": "google/gemma-3n-E4B",
    "gemma4": "google/gemma-4-e2b-it",
    "gemma4_unified": "google/gemma-4-12B-it",
    "glm46v": "zai-org/GLM-4.1V-9B-Thinking",
    "glm4v": "zai-org/GLM-4.1V-9B-Thinking",
    "glm4v_moe": "zai-org/GLM-4.5V",
    "glm5_next": "zai-org/GLM-5.3-Flash",
    "glm_ocr": "zai-org/GLM-OCR",
    "glmga": "zai-org/GLM-4.1V-9B-Thinking",
    "granite_docling": "ibm-granite/granite-for-docling-500m",
    "hy_v4_vl": "tencent/Hy4",
    "hyperclovax_vision_v2": "naver-hyperclovax/HyperCLOVAX-SEED-Think-32B",
    "inkling2": "thinkingmachines/Inkling-2-Small-MXFP8",
    "inkling2_loop": "thinkingmachines/Inkling-2-Mini",
    "janus": "deepseek-community/Janus-Pro-1B",
    "kimi_k25": "moonshotai/Kimi-K2.6",
    "lfm2_vl": "LiquidAI/LFM2-VL-1.6B",
    "lfm3_vl": "LiquidAI/LFM3-VL-2B",
    "lighton_ocr": "lightonai/LightOnOCR-1B-1025",
    "llama4": "meta-llama/Llama-4-Scout-17B-16E",
    "llava_next_video": "llava-hf/LLaVA-NeXT-Video-7B-hf",
    "minicpm_ocr": "openbmb/MiniCPM-OCR-1.0",
    "minicpmv4_6": "openbmb/MiniCPM-V-4.6",
    "minicpmv4_7": "openbmb/MiniCPM-V-4.7-1B",
    "minimax_m3_vl": "MiniMaxAI/MiniMax-M3",
    "mistral3": "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    "mistral_large4": "mistralai/Mistral-Large-4-1T-A52B",
    "molmo2": "allenai/Molmo2-8B",
    "muse_glimmer": "meta-models/Muse-Glimmer-30B",
    "muse_spark": "meta-models/Muse-Spark-Open-816B-A42B",
    "nemotron_h_omni": "nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16",
    "ovis2": "thisisiron/Ovis2-1B-hf",
    "paddleocr_vl": "PaddlePaddle/PaddleOCR-VL",
    "perception_lm": "facebook/Perception-LM-1B",
    "pix2struct": "google/pix2struct-base",
    "qianfan_ocr": "baidu/Qianfan-OCR",
    "qwen2_5_omni_thinker": "Qwen/Qwen2.5-Omni-7B",
    "qwen3_5": "Qwen/Qwen3.5-27B",
    "qwen3_5_moe": "Qwen/Qwen3.5-35B-A3B",
    "qwen3_omni_moe_thinker": "Qwen/Qwen3-Omni-30B-A3B-Instruct",
    "qwen3_vl_moe": "Qwen/Qwen3-VL-30B-A3B-Instruct",
    "qwen4_exp": "Qwen/Qwen4-Exp",
    "step3p7": "stepfun-ai/Step-3.7-Flash",
    "t5gemma2": "google/t5gemma-2-270m-270m",
    "unlimited_ocr": "baidu/Unlimited-OCR",
    "video_llama_3": "lkhl/VideoLLaMA3-2B-Image-HF",
    "video_llava": "LanguageBind/Video-LLaVA-7B-hf",
    "vipllava": "llava-hf/vip-llava-7b-hf",
}


def conventions_for(model_type: str | None) -> Conventions:
    """The conventions of a `model_type` (the default for families not listed, its source naming the family's
    documented checkpoint where there is one)."""
    if model_type in FAMILIES:
        return FAMILIES[model_type]
    checkpoint = DOCUMENTED_CHECKPOINTS.get(model_type or "")
    return replace(DEFAULT, source=f"{checkpoint}: {_TEMPLATE}") if checkpoint else DEFAULT


def folder_model_type(folder: Path) -> str | None:
    """The `model_type` of a model folder's config.json (None when it has none)."""
    try:
        value = json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None
