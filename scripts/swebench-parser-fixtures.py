#!/usr/bin/env python3
"""Writes the expected results of bench's upstream-compatible SWE-bench parsers
(tests/fixtures/logs/swebench-*/<case>.expected.json) by running the official parsers of a
swebench wheel (5.0.2) on each <case>.log: upstream's status words mapped as bench maps them
(PASSED/XFAIL -> pass, FAILED/ERROR -> fail, anything else -> skip).

    pip download --no-deps swebench==5.0.2 -d /tmp/w && unzip -q -d /tmp/w /tmp/w/swebench-5.0.2-*.whl
    python3 scripts/swebench-parser-fixtures.py /tmp/w tests/fixtures/logs

Only the wheel's `harness/constants` and `harness/log_parsers/python.py` are loaded (by path,
with the package's heavy `__init__` bypassed).
"""

import importlib.util
import json
import pathlib
import sys
import types

NAMES = {
    "swebench-cargo": ("rust", "parse_log_cargo"),
    "swebench-gotest": ("go", "parse_log_gotest"),
    "swebench-django": ("python", "parse_log_django"),
    "swebench-matplotlib": ("python", "parse_log_matplotlib"),
    "swebench-pytest": ("python", "parse_log_pytest"),
    "swebench-pytest-options": ("python", "parse_log_pytest_options"),
    "swebench-pytest-v2": ("python", "parse_log_pytest_v2"),
    "swebench-seaborn": ("python", "parse_log_seaborn"),
    "swebench-sympy": ("python", "parse_log_sympy"),
}


def load(root):
    root = pathlib.Path(root) / "swebench"
    for name in ["swebench", "swebench.harness"]:
        m = types.ModuleType(name)
        m.__path__ = []
        sys.modules[name] = m
    types_mod = types.ModuleType("swebench.types")
    types_mod.TestSpec = object
    sys.modules["swebench.types"] = types_mod

    def by_path(name, path):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    by_path("swebench.harness.constants", root / "harness/constants/__init__.py")
    return {
        lang: by_path(f"swebench.harness.log_parsers.{lang}", root / f"harness/log_parsers/{lang}.py")
        for lang in ["python", "go", "rust"]
    }


def main(wheel_dir, logs):
    mods = load(wheel_dir)
    for bench, (lang, upstream) in NAMES.items():
        d = pathlib.Path(logs) / bench
        for log in sorted(d.glob("*.log")):
            raw = getattr(mods[lang], upstream)(log.read_text(), None)
            out = {}
            for k, v in raw.items():
                out[k] = "pass" if v in ("PASSED", "XFAIL") else "fail" if v in ("FAILED", "ERROR") else "skip"
            log.with_suffix(".expected.json").write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
