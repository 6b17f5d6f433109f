"""Text from files reaches the terminal visible, never executed.

World files and store records carry text a user did not write (persona names, question texts, profiles, a
failed cell's error). Printed raw, an escape sequence in it would retitle, recolour or clear the terminal,
or move the cursor over what was printed before; a bidirectional override would reorder a line. The
command line prints through ``VisibleStream``, which shows every such character as its escape
(``\\x1b``, ``\\r``, ``\\u202e``) and keeps line breaks and tabs. The one control sequence the toolkit
prints itself, ``CLEAR_LINE`` (a carriage return and erase-line, before a progress bar on a terminal),
passes where a write begins with it; whatever follows is made visible.
"""
from __future__ import annotations

import re

# C0 controls but tab and line feed, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = m.group()
    return {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


CLEAR_LINE = "\r\x1b[K"


def visible(text: str) -> str:
    """`text` with every control character but line feed and tab shown as its escape."""
    return _HIDDEN.sub(_escape, text)


class VisibleStream:
    """A text stream that writes through `visible` to the stream it wraps; everything else is the wrapped
    stream's (its encoding, fileno, isatty)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        if text.startswith(CLEAR_LINE):
            self._stream.write(CLEAR_LINE + visible(text[len(CLEAR_LINE):]))
        else:
            self._stream.write(visible(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def silence(stream) -> None:
    """Point `stream`'s file descriptor at the null device: after its reader has gone (a broken pipe), the
    interpreter's last flush at exit then has nowhere to fail, instead of printing a second traceback."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):      # a stream without a descriptor (tests' capture): nothing to do
        pass


__all__ = ["CLEAR_LINE", "VisibleStream", "silence", "visible"]
