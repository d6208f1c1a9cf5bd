#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Check that the docs a newcomer reads stay true to the tree.

    tests/lib/doccheck.py [--root DIR] [--xlbctl PATH]

Fails (exit 1, one line per finding: FILE:LINE: what) when
  - a relative link in README.md, docs/*.md, BENCHMARKS.md or
    kmod/README.md points at a file that does not exist, or a path of the
    tree in their code spans (`bpf/...`, `user/...`, `kmod/...`,
    `tests/...`, `tools/...`, `dist/...`, `docs/...`) names none;
  - a file of the tree cites "docs/design.md contract N" (or "contracts N
    and M") and docs/design.md has no contract N, or still cites the
    design by another name than docs/design.md, or names a page of docs/
    that is not there;
  - README.md is longer than 150 lines;
  - README.md names a make goal the Makefile does not have, or an xlbctl
    command (or `xlbctl set` setting) that `xlbctl --help` does not list.
Prints what it checked on success, so a check that found nothing to
check shows.  Exit status 2: it could not run (no xlbctl, no design.md).
Used by tests/unit/docs.sh.
"""
import argparse
import os
import re
import subprocess
import sys

README_MAX_LINES = 150
DOCS = ["README.md", "BENCHMARKS.md", "kmod/README.md"]
# where citations of the design are looked for
SKIP_DIRS = {".git", "build"}
TEXT_EXT = (".c", ".h", ".sh", ".py", ".md", ".1", ".5", ".8", ".bash-completion",
            ".service", ".conf", "Kbuild", "Makefile")

findings = []


def finding(path, line, what):
    findings.append(f"{path}:{line}: {what}")


def doc_files(root):
    files = [d for d in DOCS if os.path.isfile(os.path.join(root, d))]
    ddir = os.path.join(root, "docs")
    if os.path.isdir(ddir):
        files += sorted("docs/" + f for f in os.listdir(ddir) if f.endswith(".md"))
    return files


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# a path from the top of the tree, in a code span: `user/lib/maglev.c`
TREE_PATH = re.compile(r"^(?:bpf|user|kmod|tests|tools|dist|docs)/[A-Za-z0-9_./-]+$")


def check_links(root, files):
    count = 0
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        fenced = False
        for n, line in enumerate(text.split("\n"), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                continue
            for span in re.findall(r"`([^`]*)`", line):
                for word in span.split():
                    word = word.rstrip(".,;:)")
                    if not TREE_PATH.match(word):
                        continue
                    count += 1
                    if not os.path.exists(os.path.join(root, word)):
                        finding(rel, n, f"names a path that is not in the tree: {word}")
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                count += 1
                full = os.path.normpath(os.path.join(root, os.path.dirname(rel), path))
                if not os.path.exists(full):
                    finding(rel, n, f"link to a missing file: {target}")
    return count


def design_contracts(root):
    path = os.path.join(root, "docs/design.md")
    if not os.path.isfile(path):
        print("doccheck: docs/design.md is missing", file=sys.stderr)
        sys.exit(2)
    with open(path, encoding="utf-8") as f:
        return {int(m) for m in re.findall(r"^### (\d+)\. ", f.read(), re.M)}


def tree_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if name.endswith(TEXT_EXT):
                yield os.path.relpath(os.path.join(dirpath, name), root)


# A citation may run over a comment's line break ("docs/design.md\n *
# contract 6"): comment leaders between the words count as space.
GAP = r"(?:\s|\n\s*(?:\*|#|//)?)+"
CITE = re.compile(r"docs/design\.md" + GAP + r"contracts?" + GAP +
                  r"(\d+(?:" + GAP + r"(?:,|and|&)" + GAP + r"\d+|," + GAP + r"\d+)*)")
STALE = re.compile(r"\bDESIGN" + GAP + r"contracts?\b")
DOC_PAGE = re.compile(r"(?<![\w/.-])docs/[\w.-]+\.md\b")


def check_citations(root, contracts):
    count = 0
    for rel in tree_files(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        for m in CITE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for num in re.findall(r"\d+", m.group(1)):
                count += 1
                if int(num) not in contracts:
                    finding(rel, line, f"cites docs/design.md contract {num}, "
                            f"which docs/design.md does not have")
        for m in STALE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            finding(rel, line, "cites the design as DESIGN; cite docs/design.md contract N")
        for m in DOC_PAGE.finditer(text):
            if not os.path.isfile(os.path.join(root, m.group(0))):
                line = text.count("\n", 0, m.start()) + 1
                finding(rel, line, f"names {m.group(0)}, which is not in the tree")
    return count


def make_goals(root):
    goals = set()
    with open(os.path.join(root, "Makefile"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.$()/%-][^:=#]*?)\s*::?(?!=)", line)
            if m and not line.startswith("\t"):
                goals.update(m.group(1).split())
    return goals


def xlbctl_commands(xlbctl):
    def helptext(*args):
        r = subprocess.run([xlbctl, *args, "--help"], capture_output=True,
                           text=True, timeout=10)
        if r.returncode != 0:
            print(f"doccheck: {xlbctl} {' '.join(args)} --help failed", file=sys.stderr)
            sys.exit(2)
        return r.stdout

    cmds = set()
    text = helptext()
    block = text.split("Commands:", 1)[1].split("\n\n", 1)[0]
    for line in block.split("\n"):
        words = []
        for w in line.split():
            if not re.fullmatch(r"[a-z][a-z0-9-]*", w):
                break
            words.append(w)
        if words:
            cmds.add(tuple(words))
    settings = set()
    block = helptext("set").split("Settings", 1)[1].split("\n\n", 1)[0]
    for line in block.split("\n"):
        m = re.match(r"^  ([a-z][a-z0-9-]*) ", line)
        if m:
            settings.add(m.group(1))
    if not cmds or not settings:
        print(f"doccheck: no commands or settings in {xlbctl} --help", file=sys.stderr)
        sys.exit(2)
    return cmds, settings


def readme_invocations(text, prog):
    """(line, [words]) of every command line that starts with prog: a line
    of a shell code block (```sh) or a code span (a comment after # left
    out)."""
    fenced = shell = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            shell = fenced and line.strip()[3:] in ("sh", "bash", "shell", "console")
            continue
        if fenced:
            spans = [line] if shell else []
        else:
            spans = re.findall(r"`([^`]*)`", line)
        for span in spans:
            m = re.match(r"^\s*(?:\$\s+)?" + prog + r"((?:\s+[^\s#]+)*)", span)
            if m:
                yield n, m.group(1).split()


def check_readme(root, xlbctl):
    path = os.path.join(root, "README.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if lines > README_MAX_LINES:
        finding("README.md", lines, f"README.md has {lines} lines, more than "
                f"{README_MAX_LINES}: move the detail into docs/")
    goals = make_goals(root)
    n_goals = 0
    for n, words in readme_invocations(text, "make"):
        for w in words:
            if w.startswith("-") or "=" in w:
                continue
            n_goals += 1
            if w not in goals:
                finding("README.md", n, f"make goal '{w}' is not in the Makefile")
    cmds, settings = xlbctl_commands(xlbctl)
    firsts = {c[0] for c in cmds}
    n_cmds = 0
    for n, words in readme_invocations(text, "xlbctl"):
        while words and words[0].startswith("-"):
            opt = words.pop(0)
            if opt in ("-s", "--socket", "-i", "--instance") and words:
                words.pop(0)
        if not words or words[0] in ("COMMAND",):
            continue
        n_cmds += 1
        match = [c for c in cmds if tuple(words[:len(c)]) == c]
        if not match:
            if words[0] in firsts and len(words) < 2 and (words[0],) not in cmds:
                finding("README.md", n, f"xlbctl {words[0]}: a subcommand is missing")
            else:
                finding("README.md", n, f"xlbctl command '{' '.join(words[:2])}' "
                        "is not in xlbctl --help")
            continue
        if words[0] == "set" and (len(words) < 2 or words[1] not in settings):
            finding("README.md", n, f"xlbctl set: no setting "
                    f"'{words[1] if len(words) > 1 else ''}' in xlbctl set --help")
    return n_goals, n_cmds


def main():
    ap = argparse.ArgumentParser(description="check the docs against the tree")
    ap.add_argument("--root", default=".")
    ap.add_argument("--xlbctl", default=os.path.join(os.environ.get("O", "build"), "xlbctl"))
    a = ap.parse_args()
    if not os.access(a.xlbctl, os.X_OK):
        print(f"doccheck: {a.xlbctl} is not built", file=sys.stderr)
        return 2
    files = doc_files(a.root)
    n_links = check_links(a.root, files)
    contracts = design_contracts(a.root)
    n_cites = check_citations(a.root, contracts)
    n_goals, n_cmds = check_readme(a.root, os.path.abspath(a.xlbctl))
    for f in findings:
        print(f)
    print(f"doccheck: {len(files)} docs, {n_links} relative links and paths, "
          f"{len(contracts)} contracts, {n_cites} citations, "
          f"{n_goals} make goals, {n_cmds} xlbctl commands; "
          f"{len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
