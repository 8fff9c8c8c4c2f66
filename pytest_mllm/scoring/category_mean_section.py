"""MMT-Bench's mean of the l2-category accuracies: a rate."""

from pytest_mllm.sections import Column, Section, register

register(Section(name="category_mean", title="category mean", metrics=("category_mean",),
                 columns=(Column("category_mean_accuracy", "category_mean_accuracy %", shown=False),)))
