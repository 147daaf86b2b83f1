#!/usr/bin/env python3
"""include/kvcache/kvcache.h includes every public header (include/kvcache/*.h)
directly and names each in its opening list of layers.

usage: check_umbrella_header.py SOURCE_DIR"""
import os
import re
import sys


def main(root):
    include = os.path.join(root, 'include', 'kvcache')
    headers = sorted(h for h in os.listdir(include) if h.endswith('.h') and h != 'kvcache.h')
    text = open(os.path.join(include, 'kvcache.h'), encoding='utf-8').read()
    included = set(re.findall(r'^#include "kvcache/([^"]+)"', text, re.M))
    listed = set(re.findall(r'^ \*   (\w+\.h) ', text, re.M))
    missing = [h for h in headers if h not in included]
    unlisted = [h for h in headers if h not in listed]
    for h in missing:
        print(f'kvcache.h does not include kvcache/{h}')
    for h in unlisted:
        print(f'kvcache.h\'s list of layers does not name {h}')
    if missing or unlisted:
        return 1
    print(f'kvcache.h includes and names all {len(headers)} public headers')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
