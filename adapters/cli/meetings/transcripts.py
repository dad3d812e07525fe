"""A transcript file read as the command line says: its format (--input-format), its speakers (--speaker)."""

from __future__ import annotations

import argparse

from adapters.cli.display.console import Console
from adapters.cli.files import InputError
from application import Transcript, TranscriptError

__all__ = ["imported"]


def imported(
    text: str, where: str, args: argparse.Namespace, *, name: str | None, console: Console | None
) -> Transcript:
    """``text`` read as --input-format says (or as its content shows), its labels named by --speaker;
    a file that does not parse is an :class:`InputError` naming its line or cue. With ``console``, a
    --speaker naming no speaker of the file is an error, and labels left unnamed are said on stderr."""
    speakers = dict(args.speakers)
    try:
        transcript = Transcript.parse(text, args.input_format, name=name)
        if console is not None:
            unknown = [label for label in speakers if label not in transcript.participants]
            if unknown:
                raise InputError(
                    f"--speaker {unknown[0]}={speakers[unknown[0]]}: {where} has no speaker {unknown[0]!r}"
                    f" (its speakers: {', '.join(transcript.participants) or 'none'})"
                )
        if speakers:
            transcript = Transcript.parse(text, transcript.format, speakers, name=name)
    except TranscriptError as exc:
        raise InputError(f"{where}: {exc}") from None
    if console is not None and transcript.unnamed_speakers:
        console.warning(
            f"the speakers {', '.join(transcript.unnamed_speakers)} are diarization labels and stand as"
            " their names; name them with --speaker LABEL=NAME"
        )
    return transcript
