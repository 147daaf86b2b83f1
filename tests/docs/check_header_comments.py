#!/usr/bin/env python3
"""Each doc comment of a public header (include/kvcache/*.h) sits right above
what it documents: a comment block followed directly by another comment block
that is itself followed by a declaration has lost its declaration (as
kvc_engine_create's once sat above two other functions). A comment that
introduces a group of declarations ends with a blank line instead.

usage: check_header_comments.py SOURCE_DIR"""
import glob
import os
import sys


def blocks(lines):
    """(first, last) line indexes of each comment block that starts a line."""
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith('/*'):
            j = i
            while '*/' not in lines[j]:
                j += 1
            yield i, j
            i = j + 1
        else:
            i += 1


def main(root):
    bad = []
    headers = sorted(glob.glob(os.path.join(root, 'include', 'kvcache', '*.h')))
    for path in headers:
        lines = open(path, encoding='utf-8').read().split('\n')
        found = list(blocks(lines))
        for (a0, a1), (b0, b1) in zip(found, found[1:]):
            followed = b1 + 1 < len(lines) and lines[b1 + 1].strip() != '' and not lines[b1 + 1].lstrip().startswith('/*')
            if b0 == a1 + 1 and followed:
                bad.append(f'{os.path.basename(path)}:{a0 + 1}: this comment is followed by another one '
                           f'(line {b0 + 1}), not by what it documents')
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f'every doc comment of the {len(headers)} public headers sits above its declaration')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
