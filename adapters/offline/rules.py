"""The offline model's reading rules: meeting transcripts and plain workflow-edit instructions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final, NamedTuple

from application.framing import unframe, unframe_numbered
from domain import Workflow, WorkflowStep

__all__ = [
    "ActionItem",
    "Call",
    "Decision",
    "Meeting",
    "describe_edit",
    "numbered_lines",
    "plan_edits",
    "read_meeting",
    "read_numbered",
    "spoken",
    "summary_text",
    "tagged",
]

# A capitalized word, accented letters included ("Zoë", "Ólafur", "O'Neil", "Anne-Marie").
_NAME_WORD: Final = r"[A-ZÀ-ÖØ-Þ](?:[^\W\d_]|['\u2019-])+"
# "[01:02]", "(01:02:03)" or a bare "01:02" before the speaker.
_TIMESTAMP: Final = r"(?:[\[(]\s*\d{1,2}(?::\d{2}){1,2}\s*[\])]|\d{1,2}(?::\d{2}){1,2})"
# A diarization label a transcript's speakers were left under ("SPEAKER_00", "spk_0").
_LABEL: Final = r"(?:SPEAKER|[Ss]pk|[Ss]peaker)_\d+"
_SPEAKER: Final = rf"(?:{_LABEL}|{_NAME_WORD}(?: (?:{_NAME_WORD}|\d{{1,3}})){{0,2}})"
_SPEAKER_LINE: Final = re.compile(rf"^\s*(?:{_TIMESTAMP}\s*)?(?P<speaker>{_SPEAKER}):\s+(?P<text>\S.*)$")
# Capitalized words that start sentences or stand for nobody in particular; never owners or speakers.
_NOT_NAMES: Final = frozenset(
    (
        *("It", "This", "That", "There", "These", "Those", "We", "They", "He", "She", "You", "I"),
        *("Everyone", "Everybody", "Nobody", "Someone", "Somebody", "Anyone", "Who", "What", "Which"),
        *("Then", "So", "And", "But", "Also", "Maybe", "Hopefully", "Today", "Tomorrow", "Nothing"),
        *("Something", "Action", "Decision", "Note", "Notes", "Transcript", "Summary", "Agenda"),
        *("Meeting", "Update", "Updates", "Instruction", "Task"),
    )
)
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
_OWNER_WILL: Final = re.compile(
    rf"(?:^|(?<=[\s,;(]))(?P<owner>{_NAME_WORD}(?: {_NAME_WORD})?) will (?P<rest>.+)$"
)
_ACTION_TAG: Final = re.compile(
    rf"\baction(?: item)?:\s*(?P<owner>{_NAME_WORD}(?: {_NAME_WORD})?) (?:to|will) (?P<rest>.+)$",
    re.IGNORECASE,
)
_FIRST_PERSON: Final = re.compile(r"(?:^|(?<=[\s,;(]))I(?:'ll|\u2019ll| will) (?P<rest>.+)$")
# "I'll be honest", "I'll admit": figures of speech, not commitments.
_NOT_COMMITMENTS: Final = re.compile(r"^(?:be|admit|say|bet|tell you|take that|guess|pass)\b", re.IGNORECASE)
_DECISION: Final = re.compile(
    r"\b(?:we(?:'ve|\u2019ve| have)? (?:decided|agreed)(?: (?:to|that|on))?|decision:)\s*(?P<what>.+)$",
    re.IGNORECASE,
)
_DUE: Final = re.compile(
    r"\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|today|tomorrow|tonight|eod|eow|noon|midnight"
    r"|end of (?:the )?(?:day|week|month|sprint|quarter)|next (?:week|month|sprint)"
    r"|jan(?:uary)?|feb(?:ruary)?|march|april|june|july|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?"
    r"|nov(?:ember)?|dec(?:ember)?)\b|\d",
    re.IGNORECASE,
)
_REVERSAL: Final = re.compile(r"\binstead\b|\bchange of plans?\b|\bscratch that\b", re.IGNORECASE)
_DUE_END: Final = re.compile(r"[,;(]|\s+(?:once|because|so|if|when|unless|since|but|and then)\s+")
_TRAILING: Final = " .!?;,"


class ActionItem(NamedTuple):
    """A commitment found in a transcript: who, what, by when (None when no date was said), and the
    numbers of the lines it was said on."""

    owner: str
    task: str
    due: str | None = None
    lines: tuple[int, ...] = ()


class Decision(NamedTuple):
    """A decision found in a transcript, and the numbers of the lines it was taken on."""

    text: str
    lines: tuple[int, ...] = ()


class Meeting(NamedTuple):
    """What the offline model reads from a transcript."""

    participants: tuple[str, ...] = ()
    action_items: tuple[ActionItem, ...] = ()
    decisions: tuple[Decision, ...] = ()


class Call(NamedTuple):
    """One tool call the model means to make: the tool's name and its JSON arguments."""

    name: str
    arguments: Mapping[str, object]


def _utterances(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str | None, str]]:
    for number, line in lines:
        match = _SPEAKER_LINE.match(line)
        if match is not None and match["speaker"].split()[0] not in _NOT_NAMES:
            yield number, match["speaker"], match["text"]
        elif line.strip():
            yield number, None, line.strip()


def spoken(line: str) -> str:
    """What a transcript line says: its text without the timestamp and the speaker's name."""
    match = _SPEAKER_LINE.match(line)
    return match["text"] if match is not None else line.strip()


def _split_due(rest: str) -> tuple[str, str | None]:
    """``task by due`` -> (task, due) when the words after the last " by " name a date."""
    clause = rest.strip().rstrip(_TRAILING)
    at = clause.rfind(" by ")
    if at > 0:
        # The deadline ends where an aside starts: "by Wednesday, once the build is green".
        due = _DUE_END.split(clause[at + 4 :], maxsplit=1)[0].strip()
        if _DUE.search(due):
            return clause[:at].strip(), due
    return clause, None


def _owner(candidate: str, participants: Sequence[str]) -> str | None:
    """The named owner: a known speaker when one matches, minus leading sentence words ("Then Tom")."""
    words = candidate.split()
    if candidate in participants or words[-1] in participants:
        return candidate if candidate in participants else words[-1]
    while words and words[0] in _NOT_NAMES:
        words = words[1:]
    return " ".join(words) or None


def _action_item(sentence: str, speaker: str | None, participants: Sequence[str]) -> ActionItem | None:
    tagged = _ACTION_TAG.search(sentence)
    if tagged is not None:
        task, due = _split_due(tagged["rest"])
        return ActionItem(owner=tagged["owner"], task=task, due=due) if task else None
    named = _OWNER_WILL.search(sentence)
    if named is not None and not named["rest"].rstrip().endswith("?"):
        owner = _owner(named["owner"], participants)
        task, due = _split_due(named["rest"])
        if owner is not None and task and not _NOT_COMMITMENTS.match(task):
            return ActionItem(owner=owner, task=task, due=due)
    mine = _FIRST_PERSON.search(sentence)
    if mine is not None and speaker is not None and not mine["rest"].rstrip().endswith("?"):
        task, due = _split_due(mine["rest"])
        if task and not _NOT_COMMITMENTS.match(task):
            return ActionItem(owner=speaker, task=task, due=due)
    return None


def _decision(sentence: str) -> str | None:
    match = _DECISION.search(sentence)
    if match is None:
        return None
    what = match["what"].strip().rstrip(_TRAILING)
    return what[:1].upper() + what[1:] if what else None


def read_meeting(transcript: str) -> Meeting:
    """Participants (speakers in order of first appearance), action items and decisions, each with
    the number of the line it was said on (1-based, as :meth:`str.splitlines` counts them).

    Action items: "<Name> will <task> [by <due>]", "action: <Name> to <task> [by <due>]" and the
    speaker's own "I'll <task> [by <due>]". Decisions: "we decided/agreed ...", "decision: ...".
    A due date is only split off when the words after "by" name a day, a date or a deadline.
    """
    return read_numbered(enumerate(transcript.splitlines(), 1))


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"\w+", text.casefold()) if len(word) > 3}


def read_numbered(lines: Iterable[tuple[int, str]]) -> Meeting:
    """:func:`read_meeting` over lines that carry their own numbers (a numbered frame, a chunk of one).

    A decision that says "instead" replaces the earlier decisions that share a word with it.
    """
    utterances = tuple(_utterances(lines))
    participants = list(dict.fromkeys(speaker for _, speaker, _ in utterances if speaker is not None))
    items: list[ActionItem] = []
    decisions: list[Decision] = []
    for number, speaker, text in utterances:
        for sentence in _SENTENCE_END.split(text):
            decision = _decision(sentence)
            if decision is not None:
                if _REVERSAL.search(sentence):
                    decisions = [d for d in decisions if not _words(d.text) & _words(decision)]
                decisions.append(Decision(decision, (number,)))
                continue
            item = _action_item(sentence, speaker, participants)
            if item is not None:
                items.append(item._replace(lines=(number,)))
    return Meeting(participants=tuple(participants), action_items=tuple(items), decisions=tuple(decisions))


def numbered_lines(text: str, tag: str) -> tuple[tuple[int, str], ...]:
    """The numbered lines a pipeline framed under ``tag`` (:func:`application.framing.frame_numbered`);
    the lines of ``text`` itself, numbered from 1, when it holds no such frame."""
    try:
        return unframe_numbered(text, tag)
    except ValueError:
        return tuple(enumerate(tagged(text, tag).splitlines(), 1))


def _join(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_text(meeting: Meeting) -> str:
    """The short prose summary the model writes once every tool call has its result.

    It names the participants and the counts, then every decision and every action item with its
    owner and due date, each action item in the "<Name> will <task> by <due>." form.
    """
    who = f" with {_join(meeting.participants)}" if meeting.participants else ""
    counts = (
        f"{_plural(len(meeting.action_items), 'action item')}, {_plural(len(meeting.decisions), 'decision')}"
    )
    paragraphs = [f"Meeting{who} ({counts})."]
    if meeting.decisions:
        paragraphs.append("Decided: " + " ".join(decision.text + "." for decision in meeting.decisions))
    if meeting.action_items:
        # Each in a form the transcript rules read back as the same item.
        sentences = [
            f"{owner} will {task}" + (f" by {due}." if due else ".")
            for owner, task, due, _ in meeting.action_items
        ]
        paragraphs.append("Next steps: " + " ".join(sentences))
    return "\n\n".join(paragraphs)


def tagged(text: str, tag: str) -> str:
    """The text a pipeline framed under ``tag`` (:func:`application.framing.frame`), exactly as it was
    given, entities read back as characters; all of ``text`` when it holds no such frame."""
    try:
        return unframe(text, tag)
    except ValueError:
        return text


# ---------------------------------------------------------------- workflow edits

_VERBS: Final = r"(?:add|insert|append|remove|delete|drop|rename|move)\b"
_CLAUSE_SPLIT: Final = re.compile(
    rf"\s*(?:[;,.]|\band\b|\bthen\b)\s*(?:(?:and|then|also)\s+)*(?={_VERBS})|(?<=[;.])\s+", re.IGNORECASE
)
_Q: Final = r"[\"'\u201c\u201d\u2018\u2019]?"
_ADD: Final = re.compile(
    rf"\b(?:add|insert|append)\s+(?:a\s+|an\s+|another\s+)?(?:new\s+)?step\s+(?:called\s+|named\s+)?{_Q}"
    rf"(?P<name>.+?){_Q}(?:\s+of\s+kind\s+{_Q}(?P<kind>[\w-]+){_Q})?"
    rf"(?:\s+(?P<where>after|before|following)\s+(?:the\s+)?(?:step\s+)?{_Q}(?P<anchor>.+?){_Q}(?:\s+step)?"
    rf"|\s+at\s+the\s+(?:end|bottom))?\s*$",
    re.IGNORECASE,
)
_REMOVE: Final = re.compile(
    rf"\b(?:remove|delete|drop)\s+(?:the\s+)?(?:step\s+)?{_Q}(?P<name>.+?){_Q}(?:\s+step)?\s*$", re.IGNORECASE
)
_RENAME: Final = re.compile(
    rf"\brename\s+(?:the\s+)?(?:step\s+)?{_Q}(?P<name>.+?){_Q}(?:\s+step)?\s+to\s+{_Q}(?P<new>.+?){_Q}\s*$",
    re.IGNORECASE,
)
_MOVE: Final = re.compile(
    rf"\bmove\s+(?:the\s+)?(?:step\s+)?{_Q}(?P<name>.+?){_Q}(?:\s+step)?\s+to\s+(?:the\s+)?"
    r"(?:position\s+(?:#\s*)?(?P<position>\d+)|(?P<edge>top|start|beginning|front|end|bottom))\s*$",
    re.IGNORECASE,
)
DEFAULT_KIND: Final = "task"


def _find(workflow: Workflow, name: str) -> WorkflowStep | None:
    """The step called ``name``: exact (ignoring case), else the only step whose name contains it."""
    wanted = name.strip().casefold()
    for step in workflow.steps:
        if step.name.casefold() == wanted or step.id.casefold() == wanted:
            return step
    partial = [step for step in workflow.steps if wanted and wanted in step.name.casefold()]
    return partial[0] if len(partial) == 1 else None


def _add(match: re.Match[str], workflow: Workflow) -> tuple[Call, Workflow] | None:
    name, kind, after = match["name"].strip(), match["kind"] or DEFAULT_KIND, None
    if match["anchor"] is not None:
        anchor = _find(workflow, match["anchor"])
        at = -1 if anchor is None else workflow.index_of(anchor.id)
        if match["where"].lower() == "before":
            at -= 1
        if at < 0:
            return None
        after = workflow.steps[at].id
    return Call("add_step", {"name": name, "kind": kind, "after": after}), workflow.add_step(
        name, kind, after
    )[0]


def _edit(clause: str, workflow: Workflow) -> tuple[Call, Workflow] | None:
    """The edit one clause asks for and the workflow after it; None when it is not understood."""
    match = _RENAME.search(clause) or _MOVE.search(clause) or _ADD.search(clause) or _REMOVE.search(clause)
    if match is None:
        return None
    if match.re is _ADD:
        return _add(match, workflow)
    step = _find(workflow, match["name"])
    if step is None:
        return None
    if match.re is _RENAME:
        new = match["new"].strip()
        return Call("rename_step", {"step_id": step.id, "name": new}), workflow.rename_step(step.id, new)
    if match.re is _MOVE:
        top = (match["edge"] or "").lower() in {"top", "start", "beginning", "front"}
        position = int(match["position"]) if match["position"] else 1 if top else len(workflow.steps)
        return Call("move_step", {"step_id": step.id, "position": position}), workflow.move_step(
            step.id, position
        )
    return Call("remove_step", {"step_id": step.id}), workflow.remove_step(step.id)


def plan_edits(instruction: str, workflow: Workflow) -> tuple[tuple[Call, ...], tuple[str, ...]]:
    """The edit calls for ``instruction`` against ``workflow``, in order, and the clauses not understood.

    Clauses are separated by ``;``, ``,``, "and" or "then" before a verb. Each edit is resolved against
    the workflow as the previous edits left it, so "add X after Y and move X to position 1" works
    when the tool numbers new steps the way :meth:`Workflow.add_step` does.
    """
    edits: list[Call] = []
    skipped: list[str] = []
    for clause in _CLAUSE_SPLIT.split(instruction):
        clause = clause.strip(_TRAILING + " ")
        result = _edit(clause, workflow) if clause else None
        if result is not None:
            edits.append(result[0])
            workflow = result[1]
        elif re.search(_VERBS, clause, re.IGNORECASE):
            skipped.append(clause)
    return tuple(edits), tuple(skipped)


def describe_edit(edit: Call, names: Mapping[str, str], *, done: bool = True) -> str:
    """A few words on one edit, naming steps by the names they had before the edits (``names``):
    "renamed 'Build' to 'Compile'" when ``done``, "rename 'Build' to 'Compile'" otherwise."""
    args = edit.arguments

    def step(key: str) -> str:
        step_id = str(args.get(key))
        return f"'{names.get(step_id, step_id)}'"

    verb = edit.name.removesuffix("_step")
    verb = {"add": "added", "remove": "removed", "rename": "renamed", "move": "moved"}[verb] if done else verb
    if edit.name == "add_step":
        where = f" after {step('after')}" if args.get("after") is not None else " at the end"
        return f"{verb} '{args.get('name')}' ({args.get('kind')}){where}"
    if edit.name == "remove_step":
        return f"{verb} {step('step_id')}"
    if edit.name == "rename_step":
        return f"{verb} {step('step_id')} to '{args.get('name')}'"
    return f"{verb} {step('step_id')} to position {args.get('position')}"
