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


# Run the command line in a fresh interpreter; print [exit code, top-level modules imported] as
# JSON on stderr (the tests of what an everyday command imports).
MODULES_PROBE = """
import json, sys
from offsetkeeper.cli import main as m
try:
    m.main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stdout.flush()
print(json.dumps([code, sorted({k.split(".")[0] for k in sys.modules})]), file=sys.stderr)
"""
