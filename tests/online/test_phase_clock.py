"""The --verbose line: phases in the order they ended, parts summed, a total."""
import re

from online import phase_clock


def test_phases_and_parts_make_one_line():
    phase_clock.start()
    phase_clock.phase_ended("imports")
    phase_clock.spent("verification", 0.25)
    phase_clock.spent("verification", 0.5)
    phase_clock.phase_ended("planning")
    line = phase_clock.summary()
    assert re.fullmatch(r"timing: (start-up [\d.]+ s, )?imports [\d.]+ s, planning [\d.]+ s, the rest [\d.]+ s; "
                        r"verification 0\.75 s; total [\w -]*[\d.]+ s", line), line


def test_start_forgets_the_last_commands_marks():
    phase_clock.start()
    phase_clock.phase_ended("cells")
    phase_clock.start()
    assert "cells" not in phase_clock.summary() and "the command" in phase_clock.summary()


def test_the_command_line_prints_it_under_verbose(env_dirs, capsys):
    from tutorduel.cli import main

    assert main(["worlds", "list", "--verbose"]) == 0
    assert main(["worlds", "list"]) == 0
    err = capsys.readouterr().err
    assert err.count("timing: ") == 1 and "total" in err
