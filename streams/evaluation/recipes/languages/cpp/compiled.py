"""What did not compile in a swe-ctest run, from its log: each ``swe-ctest: did not compile
<output>`` line names an object Ninja could not build; what the compiler said is the block
after Ninja's ``FAILED: <output>`` line (its command line, then the diagnostics, up to the next
step's ``[n/m]`` line or Ninja's own)."""

from __future__ import annotations

import re

__all__ = ["build_failures"]

_NOT_COMPILED = re.compile(r"^swe-ctest: did not compile (\S+)\s*$", re.MULTILINE)
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(\S+)")
_NEXT = re.compile(r"^(?:\[\d+/\d+\] |ninja: |FAILED: |swe-ctest: )")
MAX_SAID = 4000


def build_failures(output: str) -> dict[str, str]:
    """Each object that did not compile, with what the compiler said of it."""
    outputs = _NOT_COMPILED.findall(output)
    if not outputs:
        return {}
    said: dict[str, list[str]] = {}
    current: list[str] | None = None
    skip_command = False
    for line in output.splitlines():
        found = _FAILED.match(line)
        if found is not None:
            current = said.setdefault(found.group(1), [])
            skip_command = True  # Ninja prints the failed command line first
            continue
        if current is None:
            continue
        if _NEXT.match(line):
            current = None
            continue
        if skip_command:
            skip_command = False
            continue
        current.append(line)
    return {name: "\n".join(said.get(name, []))[:MAX_SAID] for name in outputs}
