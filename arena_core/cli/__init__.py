"""Command line for researchers and maintainers: ``python -m arena_core ...``.

``leaderboard`` replays a vote log (the downloaded dataset, a local folder, or
a FastChat export) into the same board the Space shows (:mod:`.board`);
``compact`` rolls vote files into monthly Parquet and ``export`` writes FastChat's
clean_battle format (:mod:`.files`); ``simulate`` runs the seeded simulations
(here). Each subpackage adds its own commands (``counts``, ``analyze``, ``judge``,
``registry``, ...). Results go to stdout, logs to stderr, so ``--format json``
output can be piped; a failure is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence

from arena_core.cli.board import add_command as add_board_command
from arena_core.cli.files import add_commands as add_file_commands
from arena_core.cli.streams import STDIN, spooled
from arena_core.printable import LineFormatter, controls_escaped, emit
from arena_core.ratings.bt import NotIdentifiableError
from arena_core.scale.cli_options import add_counts_command
from arena_core.simulation import SCENARIOS, scenario
from arena_core.simulation.options import COUNT, whole

log = logging.getLogger("arena_core")

#: The first line of ``--help`` (the module docstring's reStructuredText would show its backticks).
DESCRIPTION = (
    "Command line for researchers and maintainers: replay votes into leaderboards, compact and "
    "export vote files, run seeded simulations, check the registry's priors."
)


#: Commands defined in this package. Running one of them builds the parser without the
#: other modules' commands: the analyses import SciPy and pandas, about 0.7 s of a fresh
#: ``leaderboard`` run (``python -X importtime``).
OWN_COMMANDS = ("leaderboard", "compact", "export", "simulate")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The top-level options take no value, so the first word is the command.
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = _parser(every_command=command not in OWN_COMMANDS)
    args, extra = parser.parse_known_args(argv)
    if extra and args.run is not _simulate:  # only a scenario takes options of its own
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    if getattr(args, "out", None) == STDIN:  # export, counts: standard output, as --votes -
        # reads standard input (a file named "-" was made in the current folder)
        args.out = "/dev/stdout"  # written through the stream itself (write_atomically)
    # One record per line, whatever the logged values hold (a board's warnings name the
    # votes' ids, any string: a newline in one forged a record, an escape recoloured).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LineFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        handlers=[handler])  # fmt: skip
    try:
        with spooled(args):
            status = args.run(args)
            if sys.stdout is not None:  # None when fd 1 is closed (``>&-``)
                sys.stdout.flush()  # a reader gone before the last bytes: 141 here, not at exit
            return status
    except BrokenPipeError:  # e.g. `... | head -1` stopped reading: not an error of ours
        # Python would print a second BrokenPipeError flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return PIPE_CLOSED
    # RegistryError is a ValueError too (not imported: the registry's loader imports YAML).
    except (NotIdentifiableError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        return _error(message)
    except OSError as exc:  # a missing file, --out naming a folder, a full disk
        message = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else exc
        return _error(message)
    except MemoryError as exc:  # an option asking for more than the machine holds
        # (``--bootstrap 100000000000``: numpy's own error names the array it could not make)
        detail = " ".join(str(exc).split()) or "no detail"
        return _error(
            f"out of memory ({detail}); ask for less (fewer --bootstrap or --rounds, fewer files)"
        )


def _error(message) -> int:
    """The failure as one line (a library's message, DuckDB's say, may span several), so
    a script reading stderr gets one record per failure; exit status 2."""
    # Control characters escaped: the message may list the votes' arena or judge ids.
    print("error: " + controls_escaped(" ".join(str(message).split())), file=sys.stderr)
    return 2


#: Exit status when stdout's reader went away, as for a process killed by SIGPIPE (128 + 13).
PIPE_CLOSED = 141


def _parser(every_command: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; without ``every_command``, only this module's commands."""
    parser = argparse.ArgumentParser(prog="python -m arena_core", description=DESCRIPTION)
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    add_board_command(sub)
    add_file_commands(sub)
    # Each scenario adds its own options when it runs (see _simulate), so building this
    # parser imports no scenario; -h is handled there too, to list those options.
    sim = sub.add_parser(
        "simulate",
        add_help=False,
        parents=[_simulate_common()],
        help="seeded simulations with known truth (statistical claims)",
    )
    sim.set_defaults(run=_simulate)
    add_counts_command(sub)
    if every_command:
        from arena_core.analysis.commands import add_commands as add_analysis_commands
        from arena_core.judges.commands import add_commands as add_judge_commands
        from arena_core.registry.check import add_commands as add_registry_commands

        add_judge_commands(sub)
        add_analysis_commands(sub)
        add_registry_commands(sub)
    return parser  # fmt: skip


def _simulate_common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    common.add_argument(
        "--scenario",
        choices=tuple(SCENARIOS),
        default=next(iter(SCENARIOS)),
        help="which claim to check (default: %(default)s)",
    )
    common.add_argument(
        "--seeds",
        type=COUNT,
        default=None,
        metavar="N",
        help="independent repetitions to average over (default: the scenario's)",
    )
    common.add_argument("--seed", type=whole(0), default=0, help="first seed")
    common.add_argument("--format", choices=("table", "json"), default="table")
    return common  # fmt: skip


def _simulate(args) -> int:
    module = scenario(args.scenario)
    full = argparse.ArgumentParser(prog=f"python -m arena_core simulate --scenario {args.scenario}",
                                   description=module.__doc__.splitlines()[0], add_help=False,
                                   parents=[_simulate_common()])  # fmt: skip
    module.add_arguments(full)
    args = full.parse_args(args.extra, namespace=args)
    if args.help:
        full.print_help()
        return 0
    result = module.run(args)
    if args.format == "json":  # made whole first: a value JSON cannot hold leaves stdout empty
        emit(json.dumps(result, indent=1, allow_nan=False) + "\n")
    else:
        emit(module.format_table(result) + "\n")
    return 0
