"""``anonydb --help`` and every ``anonydb COMMAND --help`` (issue 53): a true description of the tool,
a summary line per command, help text for every option, and one worked example per command that
parses. The commands are read from the parser itself (its subparsers), never listed here; nothing
runs but argparse (the examples themselves run in the README's and the docs' replay, and by hand)."""

from __future__ import annotations

import argparse
import shlex

import pytest

from anonydb.workflow.cli import _parser, main


def _commands() -> argparse._SubParsersAction:
    (sub,) = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sub


def _summaries() -> dict[str, str]:
    """Each command's summary line: the help= of its add_parser, as `anonydb --help` lists it."""
    return {a.dest: a.help for a in _commands()._choices_actions}


COMMANDS = sorted(_commands().choices)


def _help(command: str, capsys) -> str:
    assert main([command, "--help"]) == 0
    return capsys.readouterr().out


def _example(text: str) -> str:
    """The command after ``example:`` in a help text, its backslash continuations joined."""
    lines = text.splitlines()
    assert "example:" in lines, text
    rest = lines[lines.index("example:") + 1:]
    parts = [rest[0].strip()]
    while parts[-1].endswith("\\"):
        parts[-1] = parts[-1][:-1].rstrip()
        rest = rest[1:]
        parts.append(rest[0].strip())
    return " ".join(parts)


def test_the_parser_has_commands():
    assert len(COMMANDS) >= 10 and "anonymize" in COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_shows_an_example(command, capsys):
    text = _help(command, capsys)
    lines = text.splitlines()
    assert "example:" in lines
    after = lines[lines.index("example:") + 1]
    assert after.strip().startswith(f"anonydb {command} "), after
    what = [x for x in lines[lines.index("example:") + 1:] if x.strip() and not x.rstrip().endswith("\\")]
    assert len(what) >= 2 and not what[-1].strip().startswith("anonydb"), "the example says what it does"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_example_parses(command, capsys):
    example = _example(_help(command, capsys))
    argv = shlex.split(example)
    assert argv[:2] == ["anonydb", command]
    args = _parser().parse_args(argv[1:])  # argparse exits (SystemExit) on an unknown or malformed option
    assert args.command == command


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help(command):
    parser = _commands().choices[command]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help and action.help.strip() and action.help != argparse.SUPPRESS, \
            f"anonydb {command} {'/'.join(action.option_strings) or action.dest}: no help text"


def test_top_level_options_and_commands_have_help():
    ap = _parser()
    for action in ap._actions:
        if not isinstance(action, argparse._HelpAction):
            assert action.help and action.help != argparse.SUPPRESS, action.dest
    for command, summary in _summaries().items():
        assert summary and summary.strip() and summary != argparse.SUPPRESS, command


def test_description_is_true(capsys):
    description = " ".join(_parser().description.split())
    assert "checks inside DuckDB" not in description
    assert "release" in description
    for engine in ("DuckDB", "PostgreSQL", "Spark"):
        assert engine in description
    assert main(["--help"]) == 0
    assert "anonydb COMMAND --help" in " ".join(capsys.readouterr().out.split())


def test_anonymize_summary_names_its_methods():
    summary = _summaries()["anonymize"]
    assert not summary.startswith("Mondrian:")
    (method,) = [a for a in _commands().choices["anonymize"]._actions if a.dest == "method"]
    for name in method.choices:
        assert name in summary, f"the anonymize summary does not name --method {name}"
