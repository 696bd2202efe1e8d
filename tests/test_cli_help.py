"""Every ``toollens`` help text is shown whole: the text of each command and option as defined
reaches ``--help`` (square brackets included: ``[default: 3]``, ``[auth]``), every option says
what it does, and ``--version`` answers."""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ingest.cli import app

runner = CliRunner()
#: The command tree Typer builds (its own copy of Click's classes: read by attribute).
ROOT: Any = typer.main.get_command(app)
COMMANDS = sorted(ROOT.commands)


def _words(text: str) -> str:
    """``text`` with every run of white space one space (the help is wrapped to the terminal)."""
    return " ".join(text.split())


def _letters(text: str) -> str:
    """``text`` without white space: the help is wrapped to the terminal, between words and
    after a hyphen (``--no-`` / ``incremental``)."""
    return "".join(text.split())


def _help(args: list[str]) -> str:
    result = runner.invoke(app, [*args, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    return _words(result.output)


def _defined(command: Any) -> list[str]:
    """The texts the definition of ``command`` gives: its own and each parameter's."""
    texts = [command.help or ""]
    texts += [getattr(param, "help", None) or "" for param in command.params]
    return [_words(text) for text in texts if text.strip()]


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_every_text_of_a_command_reaches_its_help_whole(name: str) -> None:
    command = ROOT.commands[name] if name else ROOT
    shown = _letters(_help([name] if name else []))
    lost = [text for text in _defined(command) if _letters(text) not in shown]
    assert lost == []


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_says_what_it_does(name: str) -> None:
    """Beyond its default: ``lint --loop-k`` once said only ``[default: 3]``."""
    undescribed = [
        param.name
        for param in ROOT.commands[name].params
        if param.param_type_name == "option"
        and not re.sub(r"\[default: [^]]*\]", "", param.help or "").strip()
    ]
    assert undescribed == []


def test_the_brackets_that_markup_would_take_are_shown() -> None:
    assert "Defaults come from the nearest pyproject.toml with a [tool.toollens.lint] table." in (
        _help(["lint"])
    )
    assert (
        "--loop-k <int range> Loop threshold: a call repeated with the same arguments this many "
        "times in a trace is a loop [default: 3] [x>=2]"
    ) in _help(["lint"])
    assert "secrets.toml with [auth] (login) and [toollens.roles]" in _help(["serve"])
    assert "Replace secrets by [REDACTED:kind] before storing" in _help(["import"])


def test_version_prints_the_installed_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert (result.exit_code, result.output) == (0, f"toollens {version('toollens')}\n")
