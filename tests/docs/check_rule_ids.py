#!/usr/bin/env python3
"""Every rule id cited in the code (include/, src/, tests/, tools/, cli/, bench/,
fuzz/) has a one-line meaning in docs/rules.md, and no source points outside
the repository.

usage: check_rule_ids.py SOURCE_DIR        (prints the ids it checked)
       check_rule_ids.py SOURCE_DIR --list (prints every cited id, one a line)

Id forms (docs/rules.md explains each family): AO 3.5, KM 8.1, RM 5, MF 4.4,
VER 7.2 (a range "RM 2-10" cites both ends), R9 (attention misuse rules),
INV-SW-1 (invariants), P-RUN-4 (verification properties)."""
import glob
import os
import re
import sys

SECTION = re.compile(r'\b(AO|KM|RM|MF|VER) (?:§ ?)?(\d+(?:\.\d+)*)(?:-(\d+(?:\.\d+)*))?')
MISUSE = re.compile(r'\bR(\d{1,2})\b')
NAMED = re.compile(r'\b((?:INV|P)-[A-Z]+[0-9]*(?:-[A-Z0-9]+)*)\b')
OUTSIDE = re.compile(r'\.\./shared|\bspec/|DESIGN\.md')


def cited(path):
    text = open(path, encoding='utf-8', errors='replace').read()
    ids = set()
    for m in SECTION.finditer(text):
        ids.add(f'{m.group(1)} {m.group(2)}')
        if m.group(3):
            ids.add(f'{m.group(1)} {m.group(3)}')
    ids.update(f'R{m.group(1)}' for m in MISUSE.finditer(text))
    ids.update(m.group(1) for m in NAMED.finditer(text))
    return ids, [n + 1 for n, line in enumerate(text.splitlines()) if OUTSIDE.search(line)]


def main():
    root = sys.argv[1]
    files = sorted(f for pattern in ('include/kvcache/*.h', 'src/**/*.[ch]', 'tests/*/*.[ch]', 'tools/*.[ch]', 'cli/*.[ch]',
                                     'bench/*.[ch]', 'fuzz/*.c')
                   for f in glob.glob(os.path.join(root, pattern), recursive=True))
    where = {}
    outside = []
    for f in files:
        ids, lines = cited(f)
        for i in ids:
            where.setdefault(i, []).append(os.path.relpath(f, root))
        outside += [f'{os.path.relpath(f, root)}:{n}' for n in lines]
    if '--list' in sys.argv:
        print('\n'.join(sorted(where)))
        return 0
    # a definition is a table row "| `ID` | meaning |" in docs/rules.md
    rules = open(os.path.join(root, 'docs/rules.md'), encoding='utf-8').read()
    defined = set(re.findall(r'^\| `([^`]+)` \|\s*\S', rules, re.M))
    missing = sorted(i for i in where if i not in defined)
    for i in missing:
        print(f'{i}: cited by {", ".join(where[i])} but not defined in docs/rules.md')
    for o in outside:
        print(f'{o}: points outside the repository (cite docs/ instead)')
    if missing or outside:
        return 1
    print(f'{len(where)} rule ids cited in {len(files)} source files, all defined in docs/rules.md')
    return 0


if __name__ == '__main__':
    sys.exit(main())
