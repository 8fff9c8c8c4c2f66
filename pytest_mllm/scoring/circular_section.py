"""MMBench's CircularEval values: circular and vanilla accuracy, in the score and category tables."""

from pytest_mllm.sections import Column, Section, register_section

register_section("circular", Section(title="CircularEval", metrics=("circular",), columns=(
    Column("circular_accuracy", "circular %", categories=True),
    Column("vanilla_accuracy", "vanilla %", categories=True),
    Column("circular_count", "circular n", unit="number", shown=False),
    Column("circular_errors", "circular err", unit="number", shown=False),
)))
