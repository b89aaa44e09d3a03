"""interopcheck as a Python package, installed the ways its users install it.

For each of two Python minors (3.12 and 3.13, pyenv builds with a shared libpython), in fresh
virtual environments made here:
- 3.12: `pip install SOURCE`; 3.13: a wheel made with `python -m build --wheel`, then installed
  with pip into an environment that never saw the build (the build's own environment is gone,
  so the program must find its Python and its probes from where it is installed).
- The wheel is tagged for its minor, the program says it embeds that minor, its man page and
  its probes are installed in the environment.
- Run by its path, without activation, it tests the environment it is installed in, with the
  probes installed beside it: a filtered matrix (NumPy and interopcheck, buffer and dlpack)
  passes and the report names that environment's python and probe folder.
- Activated (VIRTUAL_ENV, PATH) it tests the activated environment.
- PYTHONPATH is honoured: a library installed only into a folder on PYTHONPATH
  (array-api-strict) is loaded with it and not without it, and the report lists the folder.
- `--python` tests another environment of the same minor; one of the other minor is refused
  with a message saying how to get an interopcheck for it.

Needs PyPI (or pip's cache) for the build requirements, numpy, array-api-strict and build.

Usage: test_pip.py INTEROPCHECK_BINARY (unused: the point is the installed program)
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import taplib

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MINORS = ("3.12", "3.13")
PIP_TIMEOUT = 900


def shared_python(minor):
    """A pyenv Python of `minor` built with a shared libpython, or None."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for candidate in sorted(glob.glob(os.path.join(root, "versions", minor + ".*", "bin",
                                                   "python3")), reverse=True):
        probe = subprocess.run([candidate, "-c", "import sysconfig; "
                                "print(sysconfig.get_config_var('Py_ENABLE_SHARED'))"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == "1":
            return candidate
    return None


def clean_env(**extra):
    """The test's environment without what would choose the tested Python for the program."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "INTEROPCHECK_PROBE_PATH")}
    env.update(extra)
    return env


def run(args, **kwargs):
    kwargs.setdefault("env", clean_env())
    kwargs.setdefault("timeout", PIP_TIMEOUT)
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def tail(proc):
    return (proc.stdout + proc.stderr)[-3000:]


def make_venv(python, where):
    proc = run([python, "-m", "venv", where])
    return proc.returncode == 0, tail(proc)


def pip(venv, *args):
    return run([os.path.join(venv, "bin", "python"), "-m", "pip", "install",
                "--disable-pip-version-check", *args])


def site_packages(venv, minor):
    return os.path.join(venv, "lib", "python" + minor, "site-packages")


def wheel_tag(venv, minor):
    found = glob.glob(os.path.join(site_packages(venv, minor), "interopcheck-*.dist-info", "WHEEL"))
    if not found:
        return ""
    with open(found[0], encoding="utf-8") as handle:
        return " ".join(line.split(":", 1)[1].strip() for line in handle
                        if line.startswith("Tag:"))


def check_install(tap, venv, minor, how):
    program = os.path.join(venv, "bin", "interopcheck")
    tap.ok(os.access(program, os.X_OK), f"{minor} ({how}): interopcheck is on the "
           "environment's PATH (its bin/)", program)
    abi = "cp" + minor.replace(".", "")
    tag = wheel_tag(venv, minor)
    tap.ok(tag.startswith(f"{abi}-{abi}-linux_"), f"{minor}: the wheel is tagged for Python "
           f"{minor} only ({tag})", tag)
    version = run([program, "--version"])
    tap.ok(version.returncode == 0 and f"built with Python {minor}" in version.stdout,
           f"{minor}: the program embeds Python {minor}", tail(version))
    tap.ok(os.path.isfile(os.path.join(venv, "share", "man", "man1", "interopcheck.1")),
           f"{minor}: the man page is in the environment's share/man/man1")
    probes = os.path.join(site_packages(venv, minor), "interopcheck", "probes")
    tap.ok(os.path.isfile(os.path.join(probes, "numpy.py")) and
           os.path.isfile(os.path.join(probes, "_probekit.py")),
           f"{minor}: the probes are installed in site-packages/interopcheck/probes")
    return program, probes


def matrix(program, cwd, name, *extra, env=None):
    """A filtered matrix run; (process, report or None)."""
    out = os.path.join(cwd, name + ".json")
    proc = run([program, "--producer", "numpy", "--consumer", "numpy,interopcheck", "--protocol",
                "buffer,dlpack", "--dtype", "float32,int16", "-q", "-o", out, *extra],
               cwd=cwd, env=env or clean_env())
    report = None
    if os.path.isfile(out):
        with open(out, encoding="utf-8") as handle:
            report = json.load(handle)
    return proc, report


def check_matrix(tap, label, proc, report, python, probes):
    tap.ok(proc.returncode == 0 and report is not None, f"{label}: the filtered matrix runs "
           "and passes (exit 0)", tail(proc))
    if report is None:
        return
    cases = report.get("cases", [])
    outcomes = [case["outcome"] for case in cases]
    # Unsupported: layouts NumPy cannot make for a protocol, refusals the spec allows.
    tap.ok(outcomes.count("pass") >= 8 and set(outcomes) <= {"pass", "unsupported"},
           f"{label}: {outcomes.count('pass')} of {len(cases)} cases pass, the others are "
           "unsupported", sorted(set(outcomes)))
    tested = report["environment"]["python"]["executable"]
    tap.ok(os.path.realpath(os.path.dirname(tested)) == os.path.realpath(os.path.dirname(python)),
           f"{label}: the report names the environment tested ({tested})", tested)
    dirs = report["run"].get("probe_dirs", [])
    tap.ok(dirs[:1] == [os.path.realpath(probes)], f"{label}: the installed probes were used",
           dirs)


def check_pythonpath(tap, program, venv, minor, work):
    target = os.path.join(work, "extra-" + minor)
    proc = pip(venv, "--no-deps", "--target", target, "array-api-strict")
    if not tap.ok(proc.returncode == 0, f"{minor}: array-api-strict installed into a folder "
                  "outside the environment", tail(proc)):
        return
    without = run([program, "list", "--json"], cwd=work)
    with_path = run([program, "list", "--json"], cwd=work, env=clean_env(PYTHONPATH=target))

    def status(proc):
        try:
            listing = json.loads(proc.stdout)
        except ValueError:
            return None
        for library in listing.get("libraries", []):
            if library.get("name") == "array_api_strict":
                return library.get("status")
        return None

    tap.ok(status(without) != "loaded" and status(with_path) == "loaded",
           f"{minor}: PYTHONPATH is honoured: array_api_strict is {status(with_path)} with it, "
           f"{status(without)} without", tail(with_path))
    proc, report = matrix(program, work, "pythonpath-" + minor, "--producer",
                          "array_api_strict", "--protocol", "dlpack",
                          env=clean_env(PYTHONPATH=target))
    listed = report and report["environment"]["python"].get("pythonpath")
    tap.ok(proc.returncode == 0 and listed == [target], f"{minor}: a run with PYTHONPATH "
           "tests array_api_strict from it and its report lists the folder", listed or tail(proc))


def install_with_pip(tap, python, minor, work):
    venv = os.path.join(work, "pip-" + minor)
    made, detail = make_venv(python, venv)
    if not tap.ok(made, f"{minor}: a fresh virtual environment", detail):
        return None
    proc = pip(venv, SOURCE)
    tap.ok(proc.returncode == 0, f"{minor}: pip install SOURCE", tail(proc))
    return venv if proc.returncode == 0 else None


def install_from_wheel(tap, python, minor, work):
    builder = os.path.join(work, "builder-" + minor)
    venv = os.path.join(work, "wheel-" + minor)
    made, detail = make_venv(python, builder)
    made2, detail2 = make_venv(python, venv)
    if not tap.ok(made and made2, f"{minor}: fresh environments to build and to install in",
                  detail + detail2):
        return None
    dist = os.path.join(work, "dist-" + minor)
    proc = pip(builder, "build")
    if proc.returncode == 0:
        proc = run([os.path.join(builder, "bin", "python"), "-m", "build", "--wheel",
                    "--outdir", dist, SOURCE])
    wheels = glob.glob(os.path.join(dist, "interopcheck-*.whl"))
    if not tap.ok(proc.returncode == 0 and len(wheels) == 1, f"{minor}: python -m build --wheel "
                  f"makes one wheel ({', '.join(os.path.basename(w) for w in wheels)})",
                  tail(proc)):
        return None
    shutil.rmtree(builder)
    proc = pip(venv, wheels[0])
    tap.ok(proc.returncode == 0, f"{minor}: pip installs the wheel into an environment that "
           "did not build it", tail(proc))
    return venv if proc.returncode == 0 else None


def check_environment(tap, venv, minor, how, work, other_python):
    program, probes = check_install(tap, venv, minor, how)
    proc = pip(venv, "numpy")
    if not tap.ok(proc.returncode == 0, f"{minor}: numpy installed", tail(proc)):
        return
    python = os.path.join(venv, "bin", "python3")
    proc, report = matrix(program, work, "plain-" + minor)
    check_matrix(tap, f"{minor}, by its path, not activated", proc, report, python, probes)

    # Activated: another environment of the same minor is the one tested.
    other = os.path.join(work, "other-" + minor)
    made, detail = make_venv(sys_python_of(venv), other)
    proc = pip(other, "numpy") if made else None
    if tap.ok(made and proc.returncode == 0, f"{minor}: a second environment with numpy",
              detail if not made else tail(proc)):
        env = clean_env(VIRTUAL_ENV=other,
                        PATH=os.path.join(other, "bin") + os.pathsep + os.environ["PATH"])
        proc, report = matrix(program, work, "activated-" + minor, env=env)
        check_matrix(tap, f"{minor}, another environment activated", proc, report,
                     os.path.join(other, "bin", "python"), probes)
        proc, report = matrix(program, work, "python-" + minor, "--python", other)
        check_matrix(tap, f"{minor}, --python of another environment", proc, report,
                     os.path.join(other, "bin", "python"), probes)

    check_pythonpath(tap, program, venv, minor, work)

    if other_python:
        proc = run([program, "list", "--python", other_python], cwd=work)
        tap.ok(proc.returncode != 0 and "pip install" in proc.stderr and "built against Python "
               f"{minor}" in proc.stderr, f"{minor}: --python of another minor is refused, "
               "saying how to get an interopcheck for it", tail(proc))


def sys_python_of(venv):
    """The base interpreter a virtual environment was made from."""
    with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
        for line in handle:
            key, _, value = line.partition("=")
            if key.strip() == "executable":
                return value.strip()
    return os.path.join(venv, "bin", "python3")


def main():
    tap = taplib.Tap()
    pythons = {minor: shared_python(minor) for minor in MINORS}
    missing = [minor for minor, python in pythons.items() if not python]
    if missing:
        tap.skip(f"no pyenv Python {', '.join(missing)} with a shared libpython "
                 "(PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install X.Y)")
        return tap.finish()
    work = tempfile.mkdtemp(prefix="ic-pip-")
    try:
        for minor, how in zip(MINORS, ("pip install", "wheel")):
            other_minor = [m for m in MINORS if m != minor][0]
            install = install_with_pip if how == "pip install" else install_from_wheel
            venv = install(tap, pythons[minor], minor, work)
            if venv:
                check_environment(tap, venv, minor, how, work, pythons[other_minor])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
