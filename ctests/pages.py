#!/usr/bin/env python3
"""Every rule of the four seed functions' man pages and the cases that check it.

ctests/pages/<function>.txt lists each sentence of the page's PARAMETERS, DESCRIPTION, RETURN
VALUES and USAGE sections, one per line: the names of the cases that check it (space-separated),
a tab, the sentence as the page says it. A sentence that states no checkable rule has "-" for
cases and its reason after a second tab. ctests/run.sh runs it after the suite.

usage: pages.py MAN_DIR RAW_CASE_LINES
Checks, and says what fails: every listed sentence is the page's (word for word); every
sentence of those sections is listed; every case named ran (a CASE line in the raw output, so a
renamed case cannot leave a rule silently untested; a case the build skips, SKIP with its reason,
counts as run). Whether the cases passed is the suite's own count. Prints one line per page. Exit status 1 on any failure.
"""
import os
import re
import sys

SECTIONS = ("PARAMETERS", "DESCRIPTION", "RETURN VALUES", "USAGE")
HERE = os.path.dirname(os.path.abspath(__file__))


def words(text):
    return " ".join(text.split())


def page_sentences(path):
    """The sentences of the sections that state rules, whitespace-normalized."""
    text = open(path, encoding="utf-8").read()
    sentences = []
    for section in re.split(r"\n(?=[A-Z][A-Z ]+\n)", text):
        head, _, body = section.partition("\n")
        if head.strip() in SECTIONS:
            sentences += re.split(r"(?<=[.])\s+(?=[A-Z])", words(body))
    return [s for s in sentences if s]


def main():
    man_dir, raw = sys.argv[1], sys.argv[2]
    ran = {}
    for line in open(raw, encoding="utf-8", errors="replace"):
        fields = line.rstrip("\n").split("\t")
        if fields[0] == "CASE" and len(fields) > 4:
            ran[fields[1]] = fields[4]
    failed = False
    for name in sorted(os.listdir(os.path.join(HERE, "pages"))):
        function = name[: -len(".txt")]
        page = page_sentences(os.path.join(man_dir, f"{function}.3dat.txt"))
        listed, problems, rules, cases_named = [], [], 0, set()
        for number, line in enumerate(open(os.path.join(HERE, "pages", name), encoding="utf-8"), 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 2:
                problems.append(f"line {number}: no tab between cases and sentence")
                continue
            cases, sentence = fields[0].split(), words(fields[1])
            listed.append(sentence)
            if sentence not in page:
                problems.append(f"line {number}: not a sentence of the page: {sentence[:60]}")
            if cases == ["-"]:
                if len(fields) < 3 or not fields[2].strip():
                    problems.append(f"line {number}: no case and no reason")
                continue
            rules += 1
            for case in cases:
                cases_named.add(case)
                if case not in ran:
                    problems.append(f"line {number}: case {case} did not run")
        for sentence in page:
            if sentence not in listed:
                problems.append(f"not listed: {sentence[:70]}")
        passed = sum(1 for c in cases_named if ran.get(c) == "PASS")
        skipped = sum(1 for c in cases_named if ran.get(c) == "SKIP")
        status = "ok" if not problems else "FAILED"
        print(f"pages: {function}: {len(page)} sentences, {rules} rules checked by "
              f"{len(cases_named)} cases ({passed} passed{f', {skipped} skipped' if skipped else ''}): {status}")
        for problem in problems:
            print(f"pages:   {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
