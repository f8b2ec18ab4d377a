#!/usr/bin/env python3
"""Doxygen input filter: read the public headers' plain C comments as docs.

The headers are written for people (plain /* */ comments, STYLE.md), not in
Doxygen's /** */ dialect.  This filter, run by Doxygen on each header,
rewrites on the fly, keeping every line in place except one:
  - the file's opening comment becomes the file's description (@file);
  - a comment that starts a line documents the declaration after it;
  - a comment after code on the same line documents that member (/**<);
  - "--" in comments stays two dashes (Doxygen would print an en dash).
"""
import re
import sys

TRAILING = re.compile(r"^(\s*\S.*?)/\*(?![*<])")
LEADING = re.compile(r"^(\s*)/\*(?![*])")


def dashes(text):
    return text.replace("--", "\\--")


def main(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    seen_code = False
    in_comment = False
    for line in lines:
        if in_comment:
            out.append(dashes(line))
            if "*/" in line:
                in_comment = False
            continue
        m = LEADING.match(line)
        if m:
            if not seen_code:
                line = m.group(1) + "/** @file\n" + dashes(line[m.end():])
                seen_code = True
            else:
                line = m.group(1) + "/**" + dashes(line[m.end():])
        else:
            m = TRAILING.match(line)
            if m and "*/" not in m.group(1):
                line = m.group(1) + "/**<" + dashes(line[m.end():])
        if line.strip() and not line.lstrip().startswith(("/*", "*")):
            seen_code = True
        start = line.rfind("/*")
        if start >= 0 and "*/" not in line[start:]:
            in_comment = True
        out.append(line)
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
