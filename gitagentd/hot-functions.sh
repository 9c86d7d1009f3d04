#!/bin/bash
# Regenerates gitagentd/hot-functions.txt, the link order of the daemon's hot
# functions (see gitagentd/build.rs): runs a release daemon under valgrind's
# callgrind through the work an idle daemon has just done (project_id, then
# review launches, sequential and concurrent), and lists every function of
# the daemon that ran, in the order the unordered build laid them out.
#
#   GITAGENTD_NO_ORDER=1 cargo build --release --bins --locked
#   gitagentd/hot-functions.sh target/release
#   cargo build --release --bins --locked   # links with the new list
#
# Needs valgrind, git, python3 and nm. Takes a few minutes.
set -euo pipefail
bin=$(cd "${1:?usage: hot-functions.sh <dir with gitagentd and git-agent>}" && pwd)
out=$(cd "$(dirname "$0")" && pwd)/hot-functions.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/run" "$work/repo"
chmod 700 "$work/home" "$work/run"
export HOME=$work/home XDG_RUNTIME_DIR=$work/run
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
cd "$work/repo"
git init -q && echo bench > README.md && git add -A && git commit -qm init
printf 'bench\nchanged\n' > README.md && mkdir src && echo 'pub fn f() {}' > src/lib.rs

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
    "$bin/gitagentd" serve > "$work/valgrind.log" 2>&1 &
daemon=$!
# Wait for its socket: a client that found none would start a daemon of its
# own, outside callgrind.
for _ in $(seq 600); do
    [ -S "$XDG_RUNTIME_DIR/git-agent/gitagentd.sock" ] && break
    kill -0 "$daemon" 2> /dev/null || { cat "$work/valgrind.log"; exit 1; }
    sleep 0.1
done
[ -S "$XDG_RUNTIME_DIR/git-agent/gitagentd.sock" ] || { echo "the daemon under callgrind did not listen" >&2; exit 1; }
"$bin/git-agent" project_id > /dev/null
for i in 1 2 3 4 5; do "$bin/git-agent" review --dry-run > "$work/sequential$i.json"; done
for i in $(seq 10); do "$bin/git-agent" review --dry-run > "$work/concurrent$i.json" & done
for launch in $(jobs -p); do [ "$launch" = "$daemon" ] || wait "$launch"; done
served_by=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$work/sequential1.json")
[ "$served_by" = "$daemon" ] || { echo "reviews ran in daemon $served_by, not the one under callgrind ($daemon)" >&2; exit 1; }
for launch in "$work"/*.json; do
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$launch")
    "$bin/git-agent" review --wait "$id" > /dev/null
done
"$bin/gitagentd" stop > /dev/null 2>&1 || kill "$daemon"
wait "$daemon" || true

nm "$bin/gitagentd" > "$work/symbols.txt"
python3 - "$work/callgrind.out" "$work/symbols.txt" "$out" <<'PY'
import re, sys
profile, symbols, out = sys.argv[1:]
# callgrind names each object and function once, `ob=(n) name`, then by number.
name = re.compile(r'^(ob|cob|fn|cfn)=\((\d+)\)(?: (.*))?$')
objects, functions, ran = {}, {}, set()
current = called = None
for line in open(profile, errors='replace'):
    m = name.match(line.rstrip('\n'))
    if not m:
        continue
    kind, number, text = m.groups()
    if kind in ('ob', 'cob'):
        if text:
            objects[number] = text
        if kind == 'ob':
            current, called = objects.get(number), None
        else:
            called = objects.get(number)
        continue
    if text:
        functions[number] = text
    owner = current if kind == 'fn' else (called or current)
    if owner and owner.endswith('/gitagentd'):
        ran.add(functions[number])
    if kind == 'cfn':
        called = None
address = {}
for line in open(symbols):
    parts = line.split()
    if len(parts) == 3 and parts[1] in 'tTwW' and parts[2] in ran:
        address.setdefault(parts[2], int(parts[0], 16))
if len(address) < 500:
    sys.exit(f'only {len(address)} functions of the daemon ran: is callgrind.out complete?')
header = open(out).read().split('\n_', 1)[0].rstrip('\n') + '\n' if open(out).read().startswith('#') else ''
with open(out + '.tmp', 'w') as f:
    f.write(header)
    f.write(''.join(n + '\n' for n in sorted(address, key=address.get)))
import os
os.replace(out + '.tmp', out)
print(f'{len(address)} functions written to {out}')
PY
