"""``python -m schemas [--check] [--dir DIR]``: regenerate (or check) the JSON Schema files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from schemas.generate import DEFAULT_DIR, stale_json_schemas, write_json_schemas


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m schemas", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if any schema file is stale, write nothing"
    )
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="schema directory")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_json_schemas(args.dir)
        if stale:
            print(
                f"stale JSON schemas in {args.dir}: {', '.join(stale)}\n"
                "run `python -m schemas` to regenerate them",
                file=sys.stderr,
            )
            return 1
        print(f"JSON schemas in {args.dir} are up to date")
        return 0
    paths = write_json_schemas(args.dir)
    print(f"wrote {len(paths)} JSON schemas to {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
