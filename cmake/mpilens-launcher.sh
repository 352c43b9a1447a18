#!/bin/sh
# P/bin/mpilens: the mpilens command, run by the Python environment of its prefix,
# P/lib/mpilens/venv (made by `make install`, or by hand: docs/install.md).
# Relocatable: the prefix is found from where this script lies (symbolic links to it
# resolved), so the whole prefix can be moved or copied.
self=$(readlink -f -- "$0" 2>/dev/null) || self=$0
prefix=$(dirname -- "$(dirname -- "$self")")
py="$prefix/lib/mpilens/venv/bin/python"
if [ ! -x "$py" ]; then
    # a venv made by a python3 other users cannot run (a pyenv one in root's home)
    # has a bin/python that links to it: name it
    why="not found"
    if [ -L "$py" ]; then
        to=$py n=0
        while [ $n -lt 40 ] && l=$(readlink -- "$to" 2>/dev/null) && [ -n "$l" ]; do
            case $l in /*) to=$l ;; *) to=$(dirname -- "$to")/$l ;; esac
            n=$((n + 1))
        done
        why="links to $to, which cannot be run"
    fi
    py3=/usr/bin/python3
    [ -x "$py3" ] || py3=python3
    echo "mpilens: $py $why: make the command's environment with" \
         "$py3 -m venv --clear $prefix/lib/mpilens/venv &&" \
         "$py -m pip install <mpilens checkout> (docs/install.md)" >&2
    exit 2
fi
# tells the command which prefix it runs from (mpilens/paths.py: the runtime lookup)
_MPILENS_LAUNCHER=$self
export _MPILENS_LAUNCHER
exec "$py" -m mpilens.cli "$@"
