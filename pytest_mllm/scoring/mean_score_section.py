"""The mean per-sample score (ANLS, relaxed accuracy, VQA match …) as a column of the score tables."""

from pytest_mllm.sections import Column, Section, register_section

register_section("mean_score", Section(title="mean score", metrics=("mean_score",),
                                       columns=(Column("mean_score", "mean score %"),)))
