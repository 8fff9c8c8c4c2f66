"""MMMU's accuracy (its own answer reading, weighted over subjects): a rate."""

from pytest_mllm.sections import Column, Section, register_section

register_section("mmmu", Section(title="MMMU", metrics=("mmmu",),
                                 columns=(Column("mmmu_accuracy", "mmmu_accuracy %", shown=False),)))
