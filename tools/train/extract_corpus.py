#!/usr/bin/python3
"""Extract the King James Bible from Debian's bible-kjv package as plain text.

The package stores the text compressed and indexed (/usr/lib/bible.data); its
`bible` program is the only supported reader, so we ask it for the whole range
Gen1:1-Rev22:21 with pretty-printing off (-f), which yields one verse per line
as "<Ref><chapter>:<verse> <text>".

Outputs (in --out):
  verses.tsv   book<TAB>chapter<TAB>verse<TAB>text, every verse, in order
  train.txt    one verse per line, chapters not held out
  valid.txt    one verse per line, every 50th chapter (global chapter index
               49, 99, ...), so validation covers law, prophets, gospels and
               epistles rather than only the last books
A blank line separates chapters in train.txt/valid.txt; the training script
uses it as the document boundary.
"""
import argparse
import os
import re
import subprocess
import sys

VERSE_RE = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
HOLDOUT_EVERY = 50


def read_verses(bible):
    try:
        out = subprocess.run([bible, "-f", "Gen1:1-Rev22:21"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit(f"'{bible}' not found: apt-get install bible-kjv")
    verses = []
    for n, line in enumerate(out.splitlines(), 1):
        if not line.strip():
            continue
        m = VERSE_RE.match(line)
        if not m:
            sys.exit(f"line {n} of bible output is not '<Ref>c:v text': {line!r}")
        book, ch, vs, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        # Collapse the occasional double space so the tokenizer sees one form.
        verses.append((book, ch, vs, " ".join(text.split())))
    return verses


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build-train", help="output folder")
    ap.add_argument("--bible", default="/usr/bin/bible", help="the bible-kjv reader")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    verses = read_verses(args.bible)
    # Sanity: the KJV has 31,102 verses in 1,189 chapters.
    chapters = []
    for v in verses:
        key = (v[0], v[1])
        if not chapters or chapters[-1][0] != key:
            chapters.append((key, []))
        chapters[-1][1].append(v[3])
    if len(verses) != 31102 or len(chapters) != 1189:
        sys.exit(f"expected 31102 verses in 1189 chapters, got {len(verses)} in {len(chapters)}")

    with open(os.path.join(args.out, "verses.tsv"), "w", encoding="utf-8") as f:
        for b, c, v, t in verses:
            f.write(f"{b}\t{c}\t{v}\t{t}\n")
    counts = {"train": [0, 0, 0], "valid": [0, 0, 0]}
    files = {k: open(os.path.join(args.out, f"{k}.txt"), "w", encoding="utf-8")
             for k in counts}
    for i, (_, texts) in enumerate(chapters):
        split = "valid" if i % HOLDOUT_EVERY == HOLDOUT_EVERY - 1 else "train"
        files[split].write("\n".join(texts) + "\n\n")
        counts[split][0] += 1
        counts[split][1] += len(texts)
        counts[split][2] += sum(len(t) + 1 for t in texts)
    for f in files.values():
        f.close()
    for k, (c, v, ch) in counts.items():
        print(f"{k}: {c} chapters, {v} verses, {ch} characters")


if __name__ == "__main__":
    main()
