"""How sure a message-only answer is, and what it could not see.

A message names no file: the answer is the sites whose literal text explains
it, and it can be wrong in known ways. Each way is a blind spot, said in the
same answer: files that were not searched (a reference tree has no .cpp/.cu),
several sites with the same text, a best match that explains only part of the
message, a site that raises another exception type than the message says.

- ``certain``: the binary (``Exception raised from ... at PATH:LINE``) or a
  torch frame of the traceback named the line; nothing was guessed.
- ``high``: one site ranks first alone, explains the message, raises its
  exception type, and every file that could hold the check was searched.
- ``medium``: one site ranks first alone and fits, but some files were not
  searched.
- ``low``: several sites tie, the best one explains too little, raises another
  type, or cannot have raised in a plain (eager) program (torch.compile-only code,
  the C++ frontend, test helpers): said first, since the answer is then most
  likely a site that was not searched.
- ``none``: nothing matched.
"""

from __future__ import annotations

from dataclasses import dataclass

from onboard.workflows.opsource.checks import (
    EAGER,
    REACH_WHY,
    TEMPLATE,
    Match,
    short_type,
    tied,
)

CERTAIN = "certain"
HIGH = "high"
MEDIUM = "medium"
LOW = "low"
NONE = "none"
# Below this share of the message the best site's text explains, the rest
# could be another site's words as easily as runtime values.
MIN_COVERAGE = 0.6

REFERENCE_BLIND_SPOT = (
    "the .cpp/.cu files were not searched (reference tree: only headers and Python files "
    "are here), so a check in a .cpp/.cu file with the same text would not be seen"
)


@dataclass(frozen=True)
class Judgement:
    confidence: str
    blind_spots: tuple[str, ...]

    @property
    def sure(self) -> bool:
        return self.confidence in (CERTAIN, HIGH)


def judge(
    matches: list[Match],
    *,
    exc_type: str | None,
    reference: bool,
    notes: list[str] | tuple[str, ...] = (),
) -> Judgement:
    """The confidence of a ranked list of message matches, with its reasons."""
    spots: list[str] = []
    if reference:
        spots.append(REFERENCE_BLIND_SPOT)
    spots.extend(notes)
    if not matches:
        return Judgement(NONE, tuple(spots))
    best = matches[0]
    group = tied(matches)
    doubts: list[str] = []
    if best.reach == TEMPLATE:
        doubts.append(
            f"the best match is in a torchgen template ({best.path}): torchgen copies its "
            "text into generated files (build/aten/src/ATen/...), and the line that raised "
            "is in one of those"
        )
    elif best.reach != EAGER and all(m.reach != EAGER for m in group):
        doubts.append(
            f"the best match ({REACH_WHY[best.reach]}) cannot have raised this in a plain "
            "program, so the site that did is most likely one that was not searched or "
            "whose text differs"
        )
    if len(group) > 1:
        where = sorted({m.path for m in group})
        files = f" in {where[0]}" if len(where) == 1 else f" in {len(where)} files"
        doubts.append(f"{len(group)} sites match equally{files}")
        kinds = sorted({m.raises for m in group})
        if exc_type is None and len(kinds) > 1:
            doubts.append(
                "the message has no exception type; they raise "
                + ", ".join(kinds)
                + " (paste the whole `Type: message` line to tell them apart)"
            )
    if best.coverage < MIN_COVERAGE:
        doubts.append(f"the best match covers only {best.coverage:.0%} of the message")
    if best.missed:
        doubts.append(
            f"{best.missed} characters of the best match's own text are not in the message"
        )
    if best.type_fit < 0:
        doubts.append(
            f"no site with this text raises {short_type(exc_type)}; the best match raises "
            f"{best.raises}"
        )
    if doubts:
        return Judgement(LOW, tuple(doubts + spots))
    return Judgement(MEDIUM if spots else HIGH, tuple(spots))
