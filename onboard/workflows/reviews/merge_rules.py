"""Who can approve a path, read from `.github/merge_rules.yaml` as PyTorch's merge bot reads it.

The file is a list of ``{name, patterns, approved_by, mandatory_checks_name[,
ignore_flaky_failures]}``; ``approved_by`` names logins or teams (``org/team``).
The merge bot (`.github/scripts/gitutils.py`, ``patterns_to_regex``) turns the
patterns of a rule into one regex: ``.`` and ``+`` escaped, ``**`` -> ``.*``,
``*`` -> ``[^/]*``, everything else as is, and matches each changed file with
``re.match``: anchored at the start only, so ``torch/fft/**`` covers the folder
and ``third_party/onnx`` everything under it. The rules ending the file with
pattern ``'*'`` (superuser, Core Reviewers, Core Maintainers) match every path;
they are listed after the specific rules so they do not drown them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from onboard.jsonable import spec

PATH = ".github/merge_rules.yaml"
_CATCH_ALL = frozenset({"*", "**"})


class Unreadable(Exception):
    """The file is not a list of rules; the text says what was wrong."""


@dataclass(frozen=True)
class MergeRule:
    name: str
    patterns: tuple[str, ...]
    approved_by: tuple[str, ...]
    # its place in the file (the merge bot tries rules in order)
    index: int = field(metadata=spec(omit=True))

    @property
    def catch_all(self) -> bool:
        return any(p in _CATCH_ALL for p in self.patterns)

    @property
    def people(self) -> tuple[str, ...]:
        return tuple(a for a in self.approved_by if "/" not in a)

    def json_extra(self) -> dict[str, Any]:
        return {"catch_all": self.catch_all}


def pattern_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """The merge bot's regex for a rule's patterns (None when it would not compile)."""
    parts = []
    for pattern in patterns:
        out = []
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == ".":
                out.append("\\.")
            elif c == "+":
                out.append("\\+")
            elif c == "*":
                if pattern[i + 1 : i + 2] == "*":
                    out.append(".*")
                    i += 1
                else:
                    out.append("[^/]*")
            else:
                out.append(c)
            i += 1
        parts.append("".join(out))
    try:
        return re.compile("(" + "|".join(parts) + ")")
    except re.error:
        return None


def parse(text: str) -> list[MergeRule]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise Unreadable(f"not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, list):
        raise Unreadable(f"a {type(data).__name__}, not a list of rules")
    rules = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            continue
        patterns = item.get("patterns") or []
        approvers = item.get("approved_by") or []
        if not isinstance(patterns, list) or not isinstance(approvers, list):
            continue
        rules.append(
            MergeRule(
                name=str(item.get("name") or f"rule {index + 1}"),
                patterns=tuple(str(p) for p in patterns),
                approved_by=tuple(str(a) for a in approvers),
                index=index,
            )
        )
    return rules


class Matcher:
    """The rules of one file, each compiled once."""

    def __init__(self, rules: list[MergeRule]) -> None:
        self.rules = rules
        self._regex = {r.index: pattern_regex(r.patterns) for r in rules}

    def rules_for(self, path: str) -> list[MergeRule]:
        """The rules whose patterns match ``path``: the specific ones in file order,
        then the catch-all ones."""
        hits = [r for r in self.rules if (rx := self._regex[r.index]) and rx.match(path)]
        return [r for r in hits if not r.catch_all] + [r for r in hits if r.catch_all]

    def unreadable(self) -> list[str]:
        return [r.name for r in self.rules if self._regex[r.index] is None]
