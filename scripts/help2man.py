"""Writes interopcheck's man page from its --help text, so that the two never disagree.

Usage: help2man.py INTEROPCHECK OUTPUT

The help text has a usage block, a description paragraph, then sections: a line ending in a
colon names a section, indented lines starting with an option (or an environment variable or an
exit status) give an item and its text, more indented lines continue it, and any other line is
running text. That layout is turned into roff for man(7).
"""
import re
import subprocess
import sys

# An item: an option with its short form and its argument (one space may part it from its text
# where the option is as wide as the column), or any other first word (a variable, a status).
ITEM = re.compile(r"^  (-\S+(?:, -\S+)?(?: [A-Z][A-Z.]*)?|\S+)(?:\s+(\S.*))?$")


def roff(text):
    """Escapes text for roff: backslashes, hyphens of options, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def convert(help_text, version):
    lines = help_text.splitlines()
    out = [f'.TH INTEROPCHECK 1 "" "interopcheck {version}" "User Commands"',
           ".SH NAME",
           "interopcheck \\- conformance tests of the data exchange between Python array "
           "libraries",
           ".SH SYNOPSIS", ".nf"]
    i = 0
    while i < len(lines) and lines[i].strip():  # the usage block, its columns kept
        out.append(roff(lines[i][len("usage: "):]))
        i += 1
    out += [".fi", ".SH DESCRIPTION"]
    paragraph = False
    for line in lines[i:]:
        if not line.strip():
            paragraph = True
            continue
        title = not line.startswith(" ") and line.endswith(":") and len(line) < 70
        if title:
            out.append(".SH " + roff(line[:-1].upper()))
            paragraph = False
            continue
        if paragraph:
            out.append(".PP")
            paragraph = False
        item = ITEM.match(line)
        if line.startswith("  ") and not line.startswith("   ") and item:
            out += [".TP", ".B " + roff(item.group(1))]
            if item.group(2):
                out.append(roff(item.group(2)))
        else:
            out.append(roff(line.strip()))
    return "\n".join(out) + "\n"


def main():
    binary, output = sys.argv[1], sys.argv[2]
    help_text = subprocess.run([binary, "--help"], capture_output=True, text=True,
                               check=True).stdout
    version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[1:2] or ["?"]
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(convert(help_text, version[0]))


if __name__ == "__main__":
    main()
