"""HallusionBench's question, figure and all accuracies (aAcc, fAcc, qAcc): rates."""

from pytest_mllm.sections import Column, Section, register_section

register_section("hallusionbench", Section(title="HallusionBench", metrics=("hallusionbench",), columns=tuple(
    Column(key, f"{key} %", shown=False) for key in ("a_acc", "f_acc", "q_acc"))))
