"""`groupchat-lab completion SHELL`: the bash script, sourced in a real bash, completes
commands, verbs, options, choices and file names; the zsh and fish scripts name every command."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from groupchat_core.cli import build_parser
from tests.helpers import ROOT


def script(shell: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "groupchat_core", "completion", shell],
                          env=env, capture_output=True, text=True, timeout=120, cwd=cwd)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def complete(source: Path, cwd: Path, *words: str) -> list[str]:
    """What bash offers for the last word, through the function the script registers."""
    line = " ".join(f'"{w}"' for w in ("groupchat-lab", *words))
    program = (f'source "{source}"; fn=$(complete -p groupchat-lab | '
               r'sed -E "s/.* -F ([^ ]+) .*/\1/"); '
               f"COMP_WORDS=({line}); COMP_CWORD={len(words)}; "
               '"$fn"; printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [w.strip() for w in done.stdout.splitlines() if w.strip()]


def test_the_bash_script_completes_in_a_real_bash(tmp_path):
    source = tmp_path / "groupchat-lab.bash"
    source.write_text(script("bash", tmp_path))
    (tmp_path / "debate-spec.yaml").write_text("agents: []\n")
    assert complete(source, tmp_path, "de") == ["delete"]
    assert set(complete(source, tmp_path, "")) >= {"run", "list", "show", "export", "import",
                                                   "delete", "agents", "sweep", "serve",
                                                   "completion"}
    assert complete(source, tmp_path, "sweep", "") == ["run", "list", "show", "stop", "delete",
                                                        "export"]
    assert complete(source, tmp_path, "export", "x", "--format", "") == ["json", "csv", "md"]
    assert complete(source, tmp_path, "run", "--no-model") == ["--no-model-check"]
    assert complete(source, tmp_path, "run", "debate-") == ["debate-spec.yaml"]  # a file
    assert complete(source, tmp_path, "completion", "") == ["bash", "zsh", "fish", "tcsh",
                                                            "powershell"]


def test_zsh_and_fish_scripts_cover_every_command(tmp_path):
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(sub.choices)
    assert "completion" in commands and "delete" in commands
    zsh, fish = script("zsh", tmp_path), script("fish", tmp_path)
    assert zsh.startswith("#compdef groupchat-lab")
    for command in commands:
        assert f"\n    {command}:'" in zsh, command
        assert f" -a {command} -d " in fish, command
    if shutil.which("zsh"):  # a syntax check where zsh is installed
        path = tmp_path / "_groupchat-lab"
        path.write_text(zsh)
        assert subprocess.run(["zsh", "-n", str(path)], timeout=60).returncode == 0
