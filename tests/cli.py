"""Run the offsetkeeper command line in-process and capture exit code, stdout and stderr."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from offsetkeeper.cli.main import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def run_cli(capsys, *args: str) -> Result:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    code = exc.value.code
    return Result(code if isinstance(code, int) else (0 if code is None else 1), out, err)
