"""POPE's values: precision, recall, F1 and the yes ratio, in a terminal table of their own."""

from pytest_mllm.sections import Column, Section, register_section

_TABLE = "yes/no balance"

register_section("pope", Section(title="POPE", metrics=("pope",), columns=(
    Column("precision", "prec %", table=_TABLE),
    Column("recall", "recall %", table=_TABLE),
    Column("f1", "F1 %", table=_TABLE),
    Column("mean_f1", "mean F1 %", table=_TABLE,
           note="F1 of a scope of several tasks pools their answers (pooled_f1); mean F1 is the mean of its tasks' "
                "F1, as POPE's papers report it"),
    Column("yes_ratio", "yes %", table=_TABLE),
    Column("pooled_f1", "pooled F1 %", shown=False),
)))
