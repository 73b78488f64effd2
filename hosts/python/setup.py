"""Copies the component into the package at build time.

`pip install ./hosts/python` builds a wheel from this directory; the build
step below puts `toolprune.wasm` inside the `toolprune` package, taken from
(first found) `$TOOLPRUNE_WASM`, or `dist/toolprune.wasm` of the repository
this directory belongs to (written by
`cargo run -p toolprune-artifacts --bin toolprune-dist`). Without either the
build stops and says so.
"""

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def component() -> Path:
    env = os.environ.get("TOOLPRUNE_WASM")
    if env:
        return Path(env)
    return HERE.parent.parent / "dist" / "toolprune.wasm"


class BuildPyWithComponent(build_py):
    def run(self) -> None:
        super().run()
        source = component()
        if not source.is_file():
            raise SystemExit(
                f"toolprune: {source} not found. Build the component first "
                "(`cargo run -p toolprune-artifacts --bin toolprune-dist` at the "
                "repository root) or set TOOLPRUNE_WASM to its path."
            )
        target = Path(self.build_lib) / "toolprune" / "toolprune.wasm"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


setup(cmdclass={"build_py": BuildPyWithComponent})
