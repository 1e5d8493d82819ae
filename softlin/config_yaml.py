"""The strict reader of the workflow's config files: YAML (libyaml) or JSON, no key twice in a mapping.

YAML and ``json.load`` keep the last of two equal keys without a word, so ``steps: 100`` followed
by ``steps: 200`` in one mapping ran at 200.  :func:`read` refuses it, and any file that does not
parse, in one line naming the file and the line: ``config file 'PATH', line N: <reason>``
(:class:`ConfigFileError`, a ``ValueError``).  The YAML path composes the document with libyaml
(``CSafeLoader``), checks every mapping node's keys, then constructs it: the same data as
``yaml.load(f, CSafeLoader)`` at nearly its speed.  ``python -m softlin.config_yaml ARGS...``
checks the config files it names (``python -m softlin.config_yaml FILE...``), or with ``--args``
those that follow ``--configfile`` / ``--configfiles`` in a Snakemake command line (the Makefile
runs it first): Snakemake parses them before any workflow code runs and reports a syntax error
without the file's name or line (docs/faults.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MERGE_TAG = "tag:yaml.org,2002:merge"


class ConfigFileError(ValueError):
    """A config file that does not parse, or holds a key twice (one line: file, line, reason)."""


def _where(path, line: int | None) -> str:
    return f"config file '{path}'" + (f", line {line}" if line else "")


def _check_keys(node, path, trail: str = "") -> None:
    """Every mapping under ``node`` (a composed YAML node) holds each key once; else
    :class:`ConfigFileError` at the second one's line, naming the key's path and the first's line."""
    stack = [(node, trail)]
    while stack:  # iterative: deep documents, short tracebacks
        node, trail = stack.pop()
        if isinstance(node, yaml.MappingNode):
            first = {}
            for key, value in node.value:
                if key.tag == MERGE_TAG:  # '<<: *anchor' merges; explicit keys may override it
                    continue
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                full = f"{trail}.{name}" if trail else str(name)
                if name is not None:
                    ident = (key.tag, name)
                    if ident in first:
                        raise ConfigFileError(f"{_where(path, key.start_mark.line + 1)}: key '{full}' appears twice "
                                              f"(first at line {first[ident]}; YAML would keep the last silently)")
                    first[ident] = key.start_mark.line + 1
                stack.append((value, full))
        elif isinstance(node, yaml.SequenceNode):
            stack += [(item, f"{trail}[{i}]") for i, item in enumerate(node.value)]


def _line(text, i: int) -> str:
    lines = text.splitlines() if isinstance(text, str) else []
    return lines[i] if 0 <= i < len(lines) else ""


def load_yaml(text_or_stream, path="<string>"):
    """A YAML document parsed by libyaml with :func:`_check_keys` (None for an empty document)."""
    loader = LOADER(text_or_stream)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_keys(node, path)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        mark, opened = err.problem_mark or err.context_mark, err.context_mark
        reason = " ".join(str(x) for x in (err.context, err.problem) if x)
        if opened is not None and mark is not None and opened.line != mark.line:
            reason += f" (opened at line {opened.line + 1})"
        if mark is not None and "\t" in _line(text_or_stream, mark.line):
            reason += " (a tab: YAML indents with spaces)"
        raise ConfigFileError(f"{_where(path, mark.line + 1 if mark else None)}: not valid YAML: {reason}") from None
    except yaml.YAMLError as err:
        raise ConfigFileError(f"{_where(path, None)}: not valid YAML: {' '.join(str(err).split())}") from None
    finally:
        loader.dispose()


def load_json(text: str, path="<string>"):
    """A JSON document whose objects hold each key once (:class:`ConfigFileError` naming the line)."""
    decoder = json.JSONDecoder()
    parse_object = decoder.parse_object

    def strict(s_and_end, strict_, scan_once, object_hook, object_pairs_hook, memo=None):
        s, end = s_and_end
        pairs = []
        result, stop = parse_object(s_and_end, strict_, scan_once, None, lambda p: pairs.extend(p) or dict(p), memo)
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise ConfigFileError(f"{_where(path, s.count(chr(10), 0, end) + 1)}: key {key!r} appears twice in "
                                      "the JSON object that starts here (JSON readers keep the last silently)")
            seen.add(key)
        return result, stop

    decoder.parse_object = strict
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # the C scanner ignores parse_object
    return decoder.decode(text)


def read(path, mapping: bool = False):
    """A config file's data, strictly (:func:`load_json` if it parses as JSON, as Snakemake tries it
    first, else :func:`load_yaml`); ``mapping``: the top level must be a mapping (a ``--configfile``)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigFileError(f"{_where(path, None)}: cannot be read ({err.__class__.__name__}: "
                              f"{getattr(err, 'strerror', None) or err})") from None
    try:  # JSON first, as Snakemake reads a config file
        data = load_json(text, path)
    except json.JSONDecodeError:
        data = load_yaml(text, path)
    if mapping and not isinstance(data, dict):
        raise ConfigFileError(f"{_where(path, None)}: the top level must be a mapping of config keys, "
                              f"got {'an empty file' if data is None else type(data).__name__}")
    return data


def configfiles(argv) -> list[str]:
    """The files after ``--configfile`` / ``--configfiles`` in a Snakemake command line (up to the next option)."""
    out, taking = [], False
    for arg in argv:
        if arg in ("--configfile", "--configfiles"):
            taking = True
        elif arg.startswith("--configfile=") or arg.startswith("--configfiles="):
            out.append(arg.split("=", 1)[1])
            taking = False
        elif arg.startswith("-"):
            taking = False
        elif taking:
            out.append(arg)
    return out


USAGE = ("usage: python -m softlin.config_yaml FILE...              check these config files\n"
         "       python -m softlin.config_yaml --args SNAKEMAKE_ARGS...  check the --configfile files of a "
         "snakemake command line")


def main(argv=None) -> int:
    """Check config files strictly: ``FILE...``, or with ``--args`` (the Makefile's form) or any
    ``--configfile`` in ``argv`` the files of a Snakemake command line.  Exit 1 after one line per
    bad file (file, line, reason), 2 on a usage error, 0 when every file reads."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--args"]:
        paths = configfiles(argv[1:])
    elif any(a.startswith("-") for a in argv):
        paths = configfiles(argv)
        if not paths:
            print(f"no --configfile among the arguments\n{USAGE}", file=sys.stderr)
            return 2
    elif argv:
        paths = argv
    else:
        print(USAGE, file=sys.stderr)
        return 2
    bad = 0
    for path in paths:
        try:
            read(Path(path), mapping=True)
        except ConfigFileError as err:
            print(err, file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
