"""MMT-Bench's mean of the l2-category accuracies: a rate."""

from pytest_mllm.sections import Column, Section, register_section

register_section("category_mean", Section(title="category mean", metrics=("category_mean",),
                                          columns=(Column("category_mean_accuracy", "category_mean_accuracy %", shown=False),)))
