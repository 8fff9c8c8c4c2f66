"""pytest-mllm: multimodal-LLM benchmarks as pytest test suites."""

__version__ = "0.1.0"
