#!/usr/bin/env python3
"""The public headers (include/kvcache/*.h) include one another only downwards:
each header may include only the headers listed before it in LAYERS, so the
kernel layer (ops.h) never depends on the manager layer's header (cache.h),
nor any lower layer on a higher one. A new public header must be placed here.

The command's folders are layered the same way: tools/ (the commands, whose
table lists the benchmarks) may include bench/ and cli/; bench/ may include
cli/ but not tools/; cli/ (workloads, traces, plot data) includes neither.

usage: check_header_layers.py SOURCE_DIR"""
import os
import re
import sys

# Lowest first. ops.h (the kernels) sits below cache.h (the managers): the two
# share only layout.h, which sits below both.
LAYERS = ['export.h', 'version.h', 'base.h', 'half.h', 'layout.h', 'ops.h', 'cache.h', 'batch.h', 'plan.h',
          'model.h', 'runner.h', 'engine.h', 'kvcache.h']


# folder -> the command folders whose headers it may include
COMMAND_FOLDERS = {'tools': ('tools', 'bench', 'cli'), 'bench': ('bench', 'cli'), 'cli': ('cli',)}


def command_folder_violations(root):
    owner = {}
    for folder in COMMAND_FOLDERS:
        for name in os.listdir(os.path.join(root, folder)):
            if name.endswith('.h'):
                owner[name] = folder
    bad = []
    for folder, allowed in COMMAND_FOLDERS.items():
        for name in sorted(os.listdir(os.path.join(root, folder))):
            if not name.endswith(('.c', '.h')):
                continue
            text = open(os.path.join(root, folder, name), encoding='utf-8').read()
            for inc in re.findall(r'^#\s*include\s+"([^"/]+)"', text, re.M):
                if owner.get(inc, folder) not in allowed:
                    bad.append(f'{folder}/{name} includes {owner[inc]}/{inc}, which {folder}/ may not use')
    return bad


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
    bad += command_folder_violations(root)
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f'the {len(headers)} public headers include only lower layers; tools/ -> bench/ -> cli/ only downwards')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
