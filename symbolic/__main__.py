"""CLI: `python -m symbolic` lists; `show ID` prints; `markdown ID` gives Markdown; `write DIR` writes all."""
import sys

from . import DERIVATIONS, get, render_text, to_markdown, write_all
from .core import TITLES


def main(argv=None) -> int:
    """Dispatch the subcommands."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] == "list":
        for did in sorted(DERIVATIONS):
            print(f"{did}  {TITLES[did]}")
        return 0
    cmd, *rest = argv
    if cmd in ("show", "markdown") and rest:
        ids = sorted(DERIVATIONS) if rest[0] == "all" else rest
        for did in ids:
            der = get(did.upper())
            print(render_text(der) if cmd == "show" else to_markdown(der))
        return 0
    if cmd == "write" and rest:
        for p in write_all(rest[0]):
            print(p)
        return 0
    print("usage: python -m symbolic [list | show ID|all | markdown ID|all | write DIR]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
