#!/usr/bin/env python3
"""The public headers (include/kvcache/*.h) include one another only downwards:
each header may include only the headers listed before it in LAYERS, so the
kernel layer (ops.h) never depends on the manager layer's header (cache.h),
nor any lower layer on a higher one. A new public header must be placed here.

usage: check_header_layers.py SOURCE_DIR"""
import os
import re
import sys

# Lowest first. ops.h (the kernels) sits below cache.h (the managers): the two
# share only layout.h, which sits below both.
LAYERS = ['export.h', 'version.h', 'base.h', 'half.h', 'layout.h', 'ops.h', 'cache.h', 'batch.h', 'plan.h',
          'model.h', 'runner.h', 'engine.h', 'kvcache.h']


def main(root):
    include = os.path.join(root, 'include', 'kvcache')
    headers = sorted(h for h in os.listdir(include) if h.endswith('.h'))
    bad = [f'{h} is not placed in LAYERS' for h in headers if h not in LAYERS]
    for h in headers:
        if h not in LAYERS:
            continue
        text = open(os.path.join(include, h), encoding='utf-8').read()
        below = LAYERS[:LAYERS.index(h)]
        for inc in re.findall(r'^#\s*include\s+"kvcache/([^"]+)"', text, re.M):
            if inc not in below:
                bad.append(f'{h} includes kvcache/{inc}, which is not below it')
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f'the {len(headers)} public headers include only lower layers')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
