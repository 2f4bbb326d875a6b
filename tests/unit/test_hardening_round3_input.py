"""Bad input of issue 31 (item K): long numbers are never echoed whole, and a plan file over
the record limit is refused before it is parsed."""

from __future__ import annotations

import pytest

from offsetkeeper.errors import UsageError
from offsetkeeper.reset.parse import parse_offset, parse_offsets_csv


@pytest.mark.parametrize("text", ["9" * 400, "9" * 5000, "1" + "0" * 30])
def test_a_long_number_is_refused_without_echoing_it(text):
    """Invariant: a 400- (or 5,000-) digit --to-offset is one UsageError that says how many
    digits it has and never quotes them whole (nor a ValueError from int())."""
    with pytest.raises(UsageError) as exc:
        parse_offset(text)
    assert f"({len(text)} digits)" in exc.value.message and text not in exc.value.message
    assert len(exc.value.message) < 200


def test_a_long_number_in_a_plan_file_is_refused_by_line_without_echo():
    """Invariant: the same in a --from-file CSV: the line and the digit count, never the digits."""
    with pytest.raises(UsageError, match=r"line 2: offset 999999999999… \(400 digits\)") as exc:
        parse_offsets_csv("t,0,5\nt,1," + "9" * 400 + "\n", source="plan.csv")
    assert "9" * 50 not in exc.value.message


@pytest.mark.parametrize("quoted", [False, True])
def test_a_plan_file_over_the_limit_is_refused_before_parsing(quoted):
    """Invariant: a file with more lines than the record limit is refused by its line count
    before any record is parsed: its last line, which would fail the parser, is never reached
    (with quoted fields, records may span lines: then at twice the limit)."""
    n = 1_000 if not quoted else 2_001
    lines = [f'"t",{i % 3},{i}' if quoted else f"t,{i % 3},{i}" for i in range(n)]
    text = "\n".join(lines) + "\nnot,a,valid,line,at,all\n"
    with pytest.raises(UsageError, match=r"holds more than [\d,]+ offset lines \([\d,]+ lines"):
        parse_offsets_csv(text, source="plan.csv", max_records=500 if not quoted else 1_000)
    # blank lines do not count, and a file at the limit is parsed
    ok = "\n\n".join(f"t,0,{i}" if i == 0 else f"t,{i},1" for i in range(500)) + "\n\n"
    assert len(parse_offsets_csv(ok, source="plan.csv", max_records=500).offsets[None]) == 500
