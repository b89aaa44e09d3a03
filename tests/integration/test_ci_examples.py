"""The CI examples of docs/ci: parsed as YAML, their shell checked, their interopcheck command
run for real.

For the GitHub Actions workflow and the GitLab CI job: a matrix of at least two Python
versions; interopcheck built with meson against the matrix's Python; the Debian packages of
scripts/setup installed; every option of the interopcheck command one that --help lists; the
reports kept whatever the outcome (the JSON report, the dashboard, the Markdown summary, the
JUnit file), the Markdown as GitHub's job summary, the JUnit file as GitLab's test report. The
command itself (narrowed to one pair, on this build's binary and Python) must write every file
the workflow uploads.

Usage: test_ci_examples.py INTEROPCHECK_BINARY
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

import taplib

BINARY_IN_CI = ".interopcheck/build/src/interopcheck"


def setup_packages(root):
    """The Debian packages scripts/setup installs."""
    with open(os.path.join(root, "scripts", "setup"), encoding="utf-8") as handle:
        text = handle.read()
    match = re.search(r'debian-packages" setup ((?:[^\n]*\\\n)*[^\n]*)', text)
    return set(match.group(1).replace("\\\n", " ").split()) - {"||", "exit", "1"}


def help_options(binary):
    text = taplib.run(binary, "--help").stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b", text))


def shell_ok(script):
    proc = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr


def interopcheck_command(script):
    """The interopcheck invocation of a script, its continuation lines joined, as words."""
    joined = script.replace("\\\n", " ")
    for line in joined.splitlines():
        if BINARY_IN_CI in line and "--all" in line:
            return shlex.split(line.strip())
    return None


def outputs_of(words):
    """-o FILE, --markdown FILE, --junit FILE of a command, and the dashboard beside -o."""
    named = {words[i]: words[i + 1] for i in range(len(words) - 1) if words[i].startswith("-")}
    json_path = named.get("-o") or named.get("--output")
    files = {"json": json_path, "md": named.get("--markdown"), "xml": named.get("--junit")}
    if json_path:
        files["html"] = json_path[:-len(".json")] + ".html"
    return files


def check_command(tap, binary, words, where, options):
    tap.ok(words is not None, f"{where}: a step runs interopcheck --all", words)
    if not words:
        return {}
    unknown = [w for w in words[1:] if w.startswith("-") and w not in options]
    tap.ok(not unknown, f"{where}: every option of the command is one --help lists", unknown)
    files = outputs_of(words)
    tap.ok(all(files.values()) and files["json"].endswith(".json"),
           f"{where}: the command writes the JSON report, the Markdown summary and JUnit", files)
    return files


def run_for_real(tap, binary, words, where):
    """The command on this build, narrowed to one pair: it must write what the CI keeps."""
    python = os.path.join(taplib.source_root(), ".venv", "bin", "python")
    if not os.path.exists(python):
        python = sys.executable
    argv = [os.path.abspath(binary)] + [w for w in words[1:] if w != "--all"]
    argv = [python if w == "$(command -v python)" else w for w in argv]
    argv += ["--producer", "numpy", "--consumer", "numpy", "--protocol", "dlpack", "--dtype",
             "float32", "-q"]
    with tempfile.TemporaryDirectory() as workdir:
        files = outputs_of(words)
        os.makedirs(os.path.join(workdir, os.path.dirname(files["json"])), exist_ok=True)
        proc = subprocess.run(argv, cwd=workdir, capture_output=True, text=True)
        missing = [f for f in files.values() if not os.path.exists(os.path.join(workdir, f))]
        tap.ok(proc.returncode == 0 and not missing,
               f"{where}: the command, narrowed to numpy -> numpy, writes every file kept",
               f"status {proc.returncode}, missing {missing}\n{proc.stderr[-2000:]}")


def check_github(tap, binary, path, packages, options):
    with open(path, encoding="utf-8") as handle:
        flow = yaml.safe_load(handle)
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    tap.ok(isinstance(triggers, dict) and "pull_request" in triggers and "push" in triggers,
           "GitHub: runs on pushes and pull requests", triggers)
    (job,) = flow["jobs"].values()
    versions = job["strategy"]["matrix"]["python"]
    tap.ok(len(versions) >= 2 and all(re.fullmatch(r"3\.\d+", v) for v in versions) and
           job["strategy"].get("fail-fast") is False,
           "GitHub: a matrix of Python versions, each run to its end", versions)
    steps = job["steps"]
    setup = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    tap.ok(len(setup) == 1 and setup[0]["with"]["python-version"] == "${{ matrix.python }}",
           "GitHub: the matrix's Python is installed", setup)
    scripts = [s["run"] for s in steps if "run" in s]
    bad = [(s, shell_ok(s)[1]) for s in scripts if not shell_ok(s)[0]]
    tap.ok(not bad, "GitHub: every run script is valid shell", bad)
    every = "\n".join(scripts)
    tap.ok("meson setup" in every and '-Dpython="$(command -v python)"' in every,
           "GitHub: interopcheck is built with meson against that Python", every)
    installed = set(re.findall(r"apt-get install -y -q ([^\n]+)", every)[0].split())
    tap.ok(packages <= installed, "GitHub: it installs the Debian packages scripts/setup does",
           sorted(packages - installed))
    words = next(filter(None, (interopcheck_command(s) for s in scripts)), None)
    files = check_command(tap, binary, words, "GitHub", options)
    summary = [s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", "")]
    tap.ok(len(summary) == 1 and summary[0].get("if") == "always()" and
           files.get("md", "?") in summary[0]["run"],
           "GitHub: the Markdown summary is the job summary, also when cases failed", summary)
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    kept = upload[0]["with"]["path"].split() if upload else []
    tap.ok(len(upload) == 1 and upload[0].get("if") == "always()" and
           all(f in kept for f in files.values()) and "matrix.python" in upload[0]["with"]["name"],
           "GitHub: the JSON report, dashboard, summary and JUnit file are uploaded, per Python, "
           "also when cases failed", (kept, files))
    return words


def check_gitlab(tap, binary, path, packages, options):
    with open(path, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    (job,) = config.values()
    versions = job["parallel"]["matrix"][0]["PYTHON"]
    tap.ok(len(versions) >= 2 and all(re.fullmatch(r"3\.\d+", v) for v in versions) and
           job["image"] == "python:${PYTHON}",
           "GitLab: a matrix of Python versions, each in its python image", versions)
    every = "\n".join(job["before_script"] + job["script"])
    ok, err = shell_ok(every)
    tap.ok(ok, "GitLab: its scripts are valid shell", err)
    tap.ok("meson setup" in every and '-Dpython="$(command -v python)"' in every,
           "GitLab: interopcheck is built with meson against that Python", every)
    installed = set(re.findall(r"apt-get install -y -q ([^\n]+)", every)[0].split())
    tap.ok(packages <= installed, "GitLab: it installs the Debian packages scripts/setup does",
           sorted(packages - installed))
    words = interopcheck_command("\n".join(job["script"]))
    files = check_command(tap, binary, words, "GitLab", options)
    artifacts = job["artifacts"]
    folder = os.path.dirname(files.get("json", "")) + "/"
    tap.ok(artifacts.get("when") == "always" and folder in artifacts.get("paths", []) and
           artifacts.get("reports", {}).get("junit") == files.get("xml"),
           "GitLab: the reports are kept also when cases failed, the JUnit file as the test "
           "report", (artifacts, files))
    return words


def main(tap, args):
    binary = args[0]
    root = taplib.source_root()
    packages = setup_packages(root)
    tap.ok(len(packages) >= 4, "scripts/setup's Debian packages are read", packages)
    options = help_options(binary)
    github = check_github(tap, binary, os.path.join(root, "docs", "ci", "github-actions.yml"),
                          packages, options)
    gitlab = check_gitlab(tap, binary, os.path.join(root, "docs", "ci", "gitlab-ci.yml"),
                          packages, options)
    for words, where in ((github, "GitHub"), (gitlab, "GitLab")):
        if words:
            run_for_real(tap, binary, words, where)


if __name__ == "__main__":
    taplib.main(main)
