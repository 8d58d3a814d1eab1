"""`python -m ctxbench ARGS`: the installed `ctxbench` binary, run with the same arguments and exit code."""

import os
import sys

from ctxbench import find_ctxbench_bin


def main():
    try:
        exe = find_ctxbench_bin()
    except FileNotFoundError as err:
        sys.stderr.write("error: {}\n".format(err))
        return 2  # a harness error, as the binary says for its own
    argv = [exe] + sys.argv[1:]
    if sys.platform == "win32":
        # Windows has no exec that keeps the process: wait for the child and pass its code on. Ctrl-C reaches the
        # child too, which then stops on its own terms.
        import subprocess

        child = subprocess.Popen(argv)
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue
    os.execv(exe, argv)  # the binary replaces this process: its exit code, signals and terminal are its own


if __name__ == "__main__":
    sys.exit(main())
