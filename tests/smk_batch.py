"""Several ``snakemake`` command lines in ONE Python process (one import of Snakemake, ~1-2 s).

    python tests/smk_batch.py < [[cwd, [args...], output_file] or {"append": path, "text": text}, ...]

Steps run in order; an ``append`` step edits a file between runs.  Each command line runs as
``snakemake.cli.main(args)`` in its directory, its stdout and stderr
(file descriptors 1 and 2) going to its output file; prints the list of exit codes as JSON.  For
dry runs and runs that stop before any job (tests/test_workflow.py): Snakemake keeps no state
between workflows that such runs depend on.
"""
import json
import os
import sys

import snakemake.cli


def run_one(cwd, args, out):
    os.chdir(cwd)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        snakemake.cli.main(args)
        rc = 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(fd)
        os.close(saved[0])
        os.close(saved[1])
    return rc


def main(steps):
    codes = []
    for step in steps:
        if isinstance(step, dict):
            with open(step["append"], "a") as f:
                f.write(step["text"])
            codes.append(None)
        else:
            codes.append(run_one(*step))
    return codes


if __name__ == "__main__":
    print(json.dumps(main(json.load(sys.stdin))))
