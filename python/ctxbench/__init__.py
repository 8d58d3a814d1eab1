"""ctxbench from Python: the wheel carries the `ctxbench` binary, installed into the environment's scripts folder.

`python -m ctxbench ARGS` runs it with the same arguments and exits with its code (0 done, 1 a check failed,
2 a harness error); `find_ctxbench_bin()` says where it is, for tools that start it themselves.
"""

import os
import sys
import sysconfig

__all__ = ["__version__", "find_ctxbench_bin"]


def _version():
    try:
        from importlib.metadata import version
    except ImportError:  # Python 3.7 and older
        return "unknown"
    try:
        return version("ctxbench")
    except Exception:  # imported from a source tree, not installed
        return "unknown"


# The installed distribution's version, which maturin took from Cargo.toml: the binary's `--version` says the same.
__version__ = _version()

_EXE = "ctxbench" + (sysconfig.get_config_var("EXE") or (".exe" if os.name == "nt" else ""))


def _scheme_scripts(site):
    """The scripts folder of every installation scheme whose library folder is `site`, under whatever base.

    This covers a virtual environment, the interpreter's own prefix, `pip install --user`, `--prefix` and
    `--root`: each lays the library and scripts folders out as its scheme says, relative to one base.
    """
    marker = os.path.join(os.sep, "ctxbench-base")
    layout = {key: marker for key in ("base", "platbase", "userbase", "installed_base", "installed_platbase")}
    for scheme in sysconfig.get_scheme_names():
        try:
            paths = sysconfig.get_paths(scheme, vars=layout, expand=True)
        except (KeyError, ValueError):
            continue
        scripts = os.path.relpath(paths["scripts"], marker)
        for lib in {paths["purelib"], paths["platlib"]}:
            below = os.path.relpath(lib, marker)
            if below.startswith(os.pardir):
                continue
            parts = below.split(os.sep)
            if os.path.normcase(os.sep.join(site.split(os.sep)[-len(parts):])) == os.path.normcase(below):
                base = os.sep.join(site.split(os.sep)[: -len(parts)]) or os.sep
                yield os.path.join(base, scripts)


def _candidates():
    # The folder this package was installed into (site-packages, or the folder given to `pip install --target`).
    site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield from _scheme_scripts(site)
    yield os.path.join(site, "bin")  # `pip install --target DIR` puts scripts in DIR/bin
    yield sysconfig.get_path("scripts")
    if sys.version_info >= (3, 10):
        yield sysconfig.get_path("scripts", sysconfig.get_preferred_scheme("user"))


def find_ctxbench_bin():
    """The path of the `ctxbench` binary installed with this package.

    Raises FileNotFoundError, naming the folders looked in, when it is not there (a package copied without its
    scripts, or a source tree on PYTHONPATH).
    """
    looked = []
    for folder in _candidates():
        path = os.path.join(folder, _EXE)
        if os.path.isfile(path):
            return path
        if folder not in looked:
            looked.append(folder)
    raise FileNotFoundError(
        "the ctxbench binary is not installed next to this package (looked in {}): reinstall it with "
        "`pip install --force-reinstall ctxbench`, or build it with `cargo install --path .`".format(", ".join(looked))
    )
